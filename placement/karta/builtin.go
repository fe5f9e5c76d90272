package karta

import (
	"fmt"
	"io/fs"
	"sort"
	"sync"

	"github.com/fleetflow/fleetflow/deploy/resourceinterfaces"
)

var builtins = sync.OnceValues(func() ([]*Compiled, error) {
	return CompileFS(resourceinterfaces.FS, "builtin:", true)
})

// Builtins returns fleetflow's own RIs (deploy/resourceinterfaces), compiled once per process.
// The values are shared and immutable.
func Builtins() ([]*Compiled, error) {
	cs, err := builtins()
	if err != nil {
		return nil, err
	}
	return append([]*Compiled(nil), cs...), nil
}

// CompileFS parses and compiles every *.yaml file at the top of fsys, in name order. prefix is
// prepended to file names to form each RI's source.
func CompileFS(fsys fs.FS, prefix string, builtin bool) ([]*Compiled, error) {
	names, err := fs.Glob(fsys, "*.yaml")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []*Compiled
	for _, name := range names {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("read %s%s: %w", prefix, name, err)
		}
		ris, err := ParseResourceInterfaces(data, prefix+name)
		if err != nil {
			return nil, err
		}
		for _, ri := range ris {
			c, err := Compile(ri, prefix+name)
			if err != nil {
				return nil, err
			}
			c.Builtin = builtin
			out = append(out, c)
		}
	}
	return out, nil
}
