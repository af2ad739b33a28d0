package server

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosbox/talosbox/internal/api/machine"
	imachine "github.com/talosbox/talosbox/internal/machine"
	"github.com/talosbox/talosbox/internal/meta"
)

// MetaWrite sets a key of the node's META partition (Talos's MetaWrite):
// the value is written to both copies before the call answers, and the
// MetaKeys resource follows.
func (m *machineServer) MetaWrite(ctx context.Context, req *machine.MetaWriteRequest) (*machine.MetaWriteResponse, error) {
	tag, err := metaTag(req.GetKey())
	if err != nil {
		return nil, err
	}

	if err := m.node.MetaWrite(ctx, tag, req.GetValue()); err != nil {
		return nil, metaError("meta write", err)
	}

	return &machine.MetaWriteResponse{Messages: []*machine.MetaWrite{{}}}, nil
}

// MetaDelete removes a key from the node's META partition; a key that is
// not there is NotFound, as on Talos.
func (m *machineServer) MetaDelete(ctx context.Context, req *machine.MetaDeleteRequest) (*machine.MetaDeleteResponse, error) {
	tag, err := metaTag(req.GetKey())
	if err != nil {
		return nil, err
	}

	found, err := m.node.MetaDelete(ctx, tag)
	if err != nil {
		return nil, metaError("meta delete", err)
	}

	if !found {
		return nil, status.Errorf(codes.NotFound, "meta delete: key %s not found", meta.TagID(tag))
	}

	return &machine.MetaDeleteResponse{Messages: []*machine.MetaDelete{{}}}, nil
}

// metaTag checks a wire key: a uint32 in the API, a byte on disk.
func metaTag(key uint32) (uint8, error) {
	if key > 0xff {
		return 0, status.Errorf(codes.InvalidArgument, "meta: key %#x must be a uint8", key)
	}

	return uint8(key), nil
}

// metaError gives each META failure its gRPC code: the caller's mistake,
// a node that has no META, a full or a corrupt one.
func metaError(op string, err error) error {
	code := codes.Internal

	switch {
	case errors.Is(err, imachine.ErrNoMeta):
		code = codes.FailedPrecondition
	case errors.Is(err, meta.ErrInvalidTag):
		code = codes.InvalidArgument
	case errors.Is(err, meta.ErrOverflow):
		code = codes.ResourceExhausted
	case errors.Is(err, meta.ErrCorrupt):
		code = codes.DataLoss
	}

	return status.Errorf(code, "%s: %v", op, err)
}
