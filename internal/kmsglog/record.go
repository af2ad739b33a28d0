// Package kmsglog streams the kernel log to remote endpoints, as Talos's
// kmsg log delivery does for KmsgLogConfig documents (and the
// talos.logging.kernel= kernel argument): every record of /dev/kmsg, from
// the oldest the kernel still holds, as one JSON object a line over TCP,
// or one a datagram over UDP, in Talos's json_lines format.
package kmsglog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Record is one kernel log record.
type Record struct {
	// Facility and Priority are syslog's, from the record's prefix.
	Facility, Priority int
	// Seq is the kernel's sequence number of the record.
	Seq int64
	// Clock is when the record was logged, in microseconds since boot.
	Clock int64
	// Time is Clock as a wall-clock time.
	Time time.Time
	// Msg is the text after the prefix, escapes decoded, as Talos sends
	// it: with the record's trailing newline and any dictionary lines
	// (" SUBSYSTEM=...") it carries.
	Msg string
}

// ParseRecord reads one /dev/kmsg record ("pri,seq,usec,flags[,caller];
// text"), boot being when the clock started.
func ParseRecord(rec []byte, boot time.Time) (Record, error) {
	head, text, ok := bytes.Cut(rec, []byte(";"))
	if !ok {
		return Record{}, errors.New("kmsg record has no prefix")
	}

	fields := strings.Split(string(head), ",")
	if len(fields) < 3 {
		return Record{}, fmt.Errorf("kmsg record prefix %q has %d fields, want at least 3", head, len(fields))
	}

	var nums [3]int64

	for i, name := range []string{"priority", "sequence number", "clock"} {
		n, err := strconv.ParseInt(fields[i], 10, 64)
		if err != nil {
			return Record{}, fmt.Errorf("kmsg record prefix %q: %s: %w", head, name, err)
		}

		nums[i] = n
	}

	return Record{
		Facility: int(nums[0] >> 3),
		Priority: int(nums[0] & 7),
		Seq:      nums[1],
		Clock:    nums[2],
		Time:     boot.Add(time.Duration(nums[2]) * time.Microsecond),
		Msg:      unescape(text),
	}, nil
}

// unescape decodes the kernel's escapes in a record's text: \xHH for a
// byte it would not print, \\ for a backslash.
func unescape(b []byte) string {
	var sb strings.Builder

	sb.Grow(len(b))

	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			sb.WriteByte(b[i])

			continue
		}

		switch {
		case b[i+1] == '\\':
			sb.WriteByte('\\')
			i++
		case b[i+1] == 'x' && i+3 < len(b):
			if v, err := strconv.ParseUint(string(b[i+2:i+4]), 16, 8); err == nil {
				sb.WriteByte(byte(v))
				i += 3
			} else {
				sb.WriteByte(b[i])
			}
		default:
			sb.WriteByte(b[i])
		}
	}

	return sb.String()
}

// facilities and priorities are syslog's names, as Talos writes them.
var (
	facilities = [...]string{
		"kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp", "cron", "authpriv",
		"local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7",
	}
	priorities = [...]string{"emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"}
)

// FacilityName is the record's facility by name.
func (r Record) FacilityName() string {
	if r.Facility >= 0 && r.Facility < len(facilities) {
		return facilities[r.Facility]
	}

	return strconv.Itoa(r.Facility)
}

// PriorityName is the record's priority by name.
func (r Record) PriorityName() string {
	return priorities[r.Priority&7]
}

// Level is the record's priority as Talos's log level (zap's names).
func (r Record) Level() string {
	switch r.Priority & 7 {
	case 7:
		return "debug"
	case 5, 6:
		return "info"
	case 4:
		return "warn"
	default:
		return "error"
	}
}

// JSON is the record as Talos's json_lines sender writes it: the kmsg
// fields (facility, seq, clock, priority), msg, talos-time (RFC 3339 with
// nanoseconds) and talos-level, keys sorted, no newline.
func (r Record) JSON() ([]byte, error) {
	return json.Marshal(map[string]any{
		"facility":    r.FacilityName(),
		"seq":         r.Seq,
		"clock":       r.Clock,
		"priority":    r.PriorityName(),
		"msg":         r.Msg,
		"talos-time":  r.Time.Format(time.RFC3339Nano),
		"talos-level": r.Level(),
	})
}
