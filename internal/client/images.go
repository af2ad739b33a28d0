package client

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/talosbox/talosbox/internal/api/common"
	"github.com/talosbox/talosbox/internal/api/machine"
)

// importChunk is the size of one Import message: well under apid's
// request limit, large enough that a 100 MiB image is a few hundred
// messages.
const importChunk = 1 << 20

// ImportImage streams an image archive (docker save, or an OCI layout as
// a tar) to the node ctx is routed to, into the CRI containerd's ns, and
// returns the name the node gave the (first) image. progress, if not nil,
// is called with the bytes sent so far after each chunk.
func (c *Client) ImportImage(ctx context.Context, r io.Reader, ns common.ContainerdNamespace, progress func(sent int64)) (string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	s, err := c.Image.Import(ctx)
	if err != nil {
		return "", err
	}

	// Send reports io.EOF when the node ended the call early; its status
	// comes from CloseAndRecv.
	send := func(req *machine.ImageServiceImportRequest) bool {
		return s.Send(req) == nil
	}

	if send(&machine.ImageServiceImportRequest{Request: &machine.ImageServiceImportRequest_Containerd{
		Containerd: &common.ContainerdInstance{Namespace: ns},
	}}) {
		buf := make([]byte, importChunk)

		var sent int64

		for {
			n, rerr := io.ReadFull(r, buf)
			if n > 0 {
				if !send(&machine.ImageServiceImportRequest{Request: &machine.ImageServiceImportRequest_ImageChunk{ImageChunk: &common.Data{Bytes: buf[:n]}}}) {
					break
				}

				sent += int64(n)

				if progress != nil {
					progress(sent)
				}
			}

			if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
				break
			}

			if rerr != nil {
				// Cancelling tells the node the archive is not whole.
				cancel()

				return "", fmt.Errorf("read the image archive: %w", rerr)
			}
		}
	}

	resp, err := s.CloseAndRecv()
	if err != nil {
		return "", err
	}

	return resp.GetName(), nil
}
