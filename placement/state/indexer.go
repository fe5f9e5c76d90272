package state

import (
	"fmt"

	memdb "github.com/hashicorp/go-memdb"
)

// stringIndexer indexes objects of type T by a string a function derives, so schemas need no reflection.
type stringIndexer[T any] struct {
	value func(T) string
}

var (
	_ memdb.SingleIndexer = stringIndexer[int]{}
	_ memdb.PrefixIndexer = stringIndexer[int]{}
)

func (ix stringIndexer[T]) FromObject(raw any) (bool, []byte, error) {
	obj, ok := raw.(T)
	if !ok {
		return false, nil, fmt.Errorf("index: unexpected object type %T", raw)
	}
	v := ix.value(obj)
	if v == "" {
		return false, nil, nil
	}
	return true, append([]byte(v), 0), nil
}

func (ix stringIndexer[T]) FromArgs(args ...any) ([]byte, error) {
	s, err := oneString(args)
	if err != nil {
		return nil, err
	}
	return append([]byte(s), 0), nil
}

func (ix stringIndexer[T]) PrefixFromArgs(args ...any) ([]byte, error) {
	s, err := oneString(args)
	return []byte(s), err
}

// stringsIndexer indexes an object under several strings (e.g. every cluster a workload is placed on).
type stringsIndexer[T any] struct {
	values func(T) []string
}

var _ memdb.MultiIndexer = stringsIndexer[int]{}

func (ix stringsIndexer[T]) FromObject(raw any) (bool, [][]byte, error) {
	obj, ok := raw.(T)
	if !ok {
		return false, nil, fmt.Errorf("index: unexpected object type %T", raw)
	}
	values := ix.values(obj)
	if len(values) == 0 {
		return false, nil, nil
	}
	out := make([][]byte, len(values))
	for i, v := range values {
		out[i] = append([]byte(v), 0)
	}
	return true, out, nil
}

func (ix stringsIndexer[T]) FromArgs(args ...any) ([]byte, error) {
	s, err := oneString(args)
	if err != nil {
		return nil, err
	}
	return append([]byte(s), 0), nil
}

func oneString(args []any) (string, error) {
	if len(args) != 1 {
		return "", fmt.Errorf("index: want 1 argument, got %d", len(args))
	}
	s, ok := args[0].(string)
	if !ok {
		return "", fmt.Errorf("index: want string argument, got %T", args[0])
	}
	return s, nil
}
