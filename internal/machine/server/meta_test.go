package server

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	imachine "github.com/talosbox/talosbox/internal/machine"
	"github.com/talosbox/talosbox/internal/meta"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestMetaErrorCodes(t *testing.T) {
	for err, code := range map[error]codes.Code{
		fmt.Errorf("x: %w", imachine.ErrNoMeta):  codes.FailedPrecondition,
		fmt.Errorf("x: %w", meta.ErrCorrupt):     codes.DataLoss,
		fmt.Errorf("x: %w", meta.ErrOverflow):    codes.ResourceExhausted,
		fmt.Errorf("x: %w", meta.ErrInvalidTag):  codes.InvalidArgument,
		errors.New("write /dev/vda4: I/O error"): codes.Internal,
	} {
		st, _ := status.FromError(metaError("meta write", err))
		if st.Code() != code || !strings.HasPrefix(st.Message(), "meta write: ") {
			t.Errorf("%v: %v %q, want %v", err, st.Code(), st.Message(), code)
		}
	}
}
