package kmsglog

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"
)

// sender writes JSON lines to one endpoint, connecting when it has
// something to send and no connection (after a failure, again).
type sender struct {
	endpoint *url.URL
	conn     net.Conn
}

// errPartial is a record only partly written: Talos drops it rather than
// send it again, so the receiver never sees half a duplicate.
var errPartial = errors.New("partly sent")

// send writes one record (a line over TCP, a datagram over UDP).
func (s *sender) send(ctx context.Context, rec []byte) error {
	if s.endpoint.Scheme == "tcp" {
		rec = append(rec, '\n')
	}

	if s.conn == nil {
		conn, err := new(net.Dialer).DialContext(ctx, s.endpoint.Scheme, s.endpoint.Host)
		if err != nil {
			return err
		}

		s.conn = conn
	}

	deadline, _ := ctx.Deadline()
	s.conn.SetWriteDeadline(deadline) //nolint:errcheck // the write reports a broken connection

	if n, err := s.conn.Write(rec); err != nil {
		s.close()

		if n > 0 {
			return fmt.Errorf("%w: %w", errPartial, err)
		}

		return err
	}

	return nil
}

func (s *sender) close() {
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
}

// Talos's timings: a send gives up after sendTimeout; a record no
// endpoint took is sent again after retryMin, here doubling up to
// retryMax while every endpoint stays down.
const (
	sendTimeout = 5 * time.Second
	retryMin    = time.Second
	retryMax    = 30 * time.Second
)
