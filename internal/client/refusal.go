package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc/credentials"
)

// certVerdict wraps TLS credentials so that a node refusing this client's
// certificate says so. Under TLS 1.3 the client's handshake is over
// before the server has checked the client's certificate; the refusal is
// an alert that gRPC would otherwise meet on its first write, as
// "write: broken pipe". The server's first bytes are either its HTTP/2
// settings or that alert, so the first byte read is the verdict.
type certVerdict struct {
	credentials.TransportCredentials
}

// ErrCertificateRefused: the node's TLS handshake refused this client's
// certificate (another cluster's, expired, or not a client certificate).
var ErrCertificateRefused = errors.New("the node refused this client's certificate")

// ClientHandshake implements credentials.TransportCredentials.
func (c certVerdict) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ClientHandshake(ctx, authority, raw)
	if err != nil {
		return nil, nil, err
	}

	if d, ok := ctx.Deadline(); ok {
		_ = conn.SetReadDeadline(d)
	}

	var first [1]byte

	n, err := conn.Read(first[:])

	_ = conn.SetReadDeadline(time.Time{})

	if err != nil {
		conn.Close()

		var op *net.OpError
		if errors.As(err, &op) && op.Op == "remote error" {
			return nil, nil, fmt.Errorf("%w (%v): is the talosconfig for this cluster?", ErrCertificateRefused, op.Err)
		}

		return nil, nil, err
	}

	return &peekedConn{Conn: conn, first: first[:n]}, info, nil
}

// Clone implements credentials.TransportCredentials.
func (c certVerdict) Clone() credentials.TransportCredentials {
	return certVerdict{c.TransportCredentials.Clone()}
}

// peekedConn gives back the byte the verdict read before the rest.
type peekedConn struct {
	net.Conn
	first []byte
}

func (p *peekedConn) Read(b []byte) (int, error) {
	if len(p.first) > 0 {
		n := copy(b, p.first)
		p.first = p.first[n:]

		return n, nil
	}

	return p.Conn.Read(b)
}
