package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is the release this binary was built as, stamped at build time:
// go build -ldflags "-X main.version=0.2.0". Without it, the version is the module's, as go install records it.
var version = ""

func init() { registerCommand(newVersionCommand) }

// buildVersion says what this binary is: its release, the commit and whether the tree had changes, and the Go
// version that built it.
type buildVersion struct {
	Version  string `json:"version"`
	Commit   string `json:"commit,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

func currentVersion() buildVersion {
	v := buildVersion{Version: version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if v.Version == "" {
		v.Version = info.Main.Version // "(devel)" for a build from a checkout
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func newVersionCommand() *cobra.Command {
	var output outputFormat
	cmd := &cobra.Command{
		Use:   "version [-o table|json|yaml]",
		Short: "Print the version, commit and Go version of this binary",
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := currentVersion()
			if output.structured() {
				return output.encode(cmd.OutOrStdout(), v)
			}
			commit := v.Commit
			if commit == "" {
				commit = "unknown"
			}
			if v.Modified {
				commit += " (modified)"
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "fleetflow %s\ncommit:   %s\ngo:       %s %s\n", v.Version, commit, v.Go, v.Platform)
			return err
		},
	}
	registerOutput(cmd.Flags(), &output)
	return cmd
}
