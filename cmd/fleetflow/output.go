package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/pflag"
	sigsyaml "sigs.k8s.io/yaml"
)

// outputFormat is the value of an -o flag: table, for a person, or json or yaml, for tools, with the same fields.
type outputFormat string

const (
	outputTable outputFormat = "table"
	outputJSON  outputFormat = "json"
	outputYAML  outputFormat = "yaml"
)

func (o *outputFormat) String() string { return string(*o) }

func (o *outputFormat) Type() string { return "format" }

// Set refuses a format there is not; the flag's error is then a usage error (exit 2).
func (o *outputFormat) Set(v string) error {
	switch f := outputFormat(v); f {
	case outputTable, outputJSON, outputYAML:
		*o = f
		return nil
	}
	return fmt.Errorf("want table, json or yaml")
}

// registerOutput adds -o to a command, table by default.
func registerOutput(flags *pflag.FlagSet, o *outputFormat) {
	*o = outputTable
	flags.VarP(o, "output", "o", "output format: table, json or yaml")
}

// structured reports whether the output is for tools: JSON or YAML.
func (o outputFormat) structured() bool { return o == outputJSON || o == outputYAML }

// encode writes v as indented JSON, or as the YAML of that JSON.
func (o outputFormat) encode(w io.Writer, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return o.writeJSON(w, append(data, '\n'))
}

// stream has write produce JSON, written as it comes for JSON, or converted to YAML.
func (o outputFormat) stream(w io.Writer, write func(io.Writer) error) error {
	if o == outputJSON {
		return write(w)
	}
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return err
	}
	return o.writeJSON(w, buf.Bytes())
}

func (o outputFormat) writeJSON(w io.Writer, data []byte) error {
	if o == outputYAML {
		converted, err := sigsyaml.JSONToYAML(data)
		if err != nil {
			return err
		}
		data = converted
	}
	_, err := w.Write(data)
	return err
}
