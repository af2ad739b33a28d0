package qemu

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"time"
)

// QMP runs one QEMU Machine Protocol command and returns its "return"
// value. Each call opens its own session (QMP serves one client at a
// time), so calls must not overlap on one VM.
func (vm *VM) QMP(ctx context.Context, command string, args any) (json.RawMessage, error) {
	var d net.Dialer

	conn, err := d.DialContext(ctx, "unix", vm.qmpPath)
	if err != nil {
		return nil, fmt.Errorf("%s: qmp: %w", vm.cfg.Name, err)
	}
	defer conn.Close()

	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	} else {
		_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	}

	r := bufio.NewReader(conn)
	enc := json.NewEncoder(conn)

	// reply reads messages up to the next one that is not an event.
	reply := func() (json.RawMessage, error) {
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return nil, err
			}

			var msg struct {
				Event  string          `json:"event"`
				QMP    json.RawMessage `json:"QMP"`
				Return json.RawMessage `json:"return"`
				Error  *struct {
					Class string `json:"class"`
					Desc  string `json:"desc"`
				} `json:"error"`
			}

			if err := json.Unmarshal(line, &msg); err != nil {
				return nil, fmt.Errorf("bad QMP message %q: %w", line, err)
			}

			switch {
			case msg.Event != "":
				continue
			case msg.Error != nil:
				return nil, fmt.Errorf("%s: %s", msg.Error.Class, msg.Error.Desc)
			case msg.QMP != nil:
				return msg.QMP, nil
			default:
				return msg.Return, nil
			}
		}
	}

	if _, err := reply(); err != nil { // the greeting
		return nil, fmt.Errorf("%s: qmp greeting: %w", vm.cfg.Name, err)
	}

	for _, c := range []struct {
		name string
		args any
	}{{"qmp_capabilities", nil}, {command, args}} {
		req := map[string]any{"execute": c.name}
		if c.args != nil {
			req["arguments"] = c.args
		}

		if err := enc.Encode(req); err != nil {
			return nil, fmt.Errorf("%s: qmp %s: %w", vm.cfg.Name, c.name, err)
		}

		ret, err := reply()
		if err != nil {
			return nil, fmt.Errorf("%s: qmp %s: %w", vm.cfg.Name, c.name, err)
		}

		if c.name == command {
			return ret, nil
		}
	}

	panic("unreachable")
}

// SetLink sets a NIC's link (by its netdev ID) up or down, as pulling or
// plugging its cable would: the guest sees carrier change and frames in
// both directions are dropped while it is down.
func (vm *VM) SetLink(ctx context.Context, id string, up bool) error {
	_, err := vm.QMP(ctx, "set_link", map[string]any{"name": id, "up": up})
	return err
}
