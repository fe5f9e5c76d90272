//go:build !linux

package netlab

import (
	"context"
	"errors"
	"net"
)

func dialIn(context.Context, string, string, string) (net.Conn, error) {
	return nil, errors.New("netlab: network namespaces are Linux only")
}
