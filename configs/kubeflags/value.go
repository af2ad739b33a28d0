package kubeflags

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// CheckValue refuses a value the component's flag parser would refuse, for
// the types whose parser is known and simple; it mirrors pflag's Set (and
// component-base's for mapStringBool and Kubernetes' IPVar for "ip").
// Values of other types are accepted: only the component can judge them;
// so is any value of the zero Flag, which Lookup returns for a flag it
// does not know.
// That includes "mapStringString", whose name three parsers share:
// key=value pairs (--system-reserved), key<value pairs
// (--eviction-hard "memory.available<100Mi") and ConfigurationMap, which
// takes bare keys too (--runtime-config "api/all", --node-labels).
func (f Flag) CheckValue(v string) error {
	switch f.Type {
	case "bool":
		if _, err := strconv.ParseBool(v); err != nil {
			return errors.New("want true or false")
		}
	case "int", "int64":
		return checkInt(v, 64)
	case "int32":
		return checkInt(v, 32)
	case "int16":
		return checkInt(v, 16)
	case "int8":
		return checkInt(v, 8)
	case "uint", "uint64":
		return checkUint(v, 64)
	case "uint32":
		return checkUint(v, 32)
	case "uint16":
		return checkUint(v, 16)
	case "uint8":
		return checkUint(v, 8)
	case "float", "float64":
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			return errors.New("want a number")
		}
	case "float32":
		if _, err := strconv.ParseFloat(v, 32); err != nil {
			return errors.New("want a number")
		}
	case "duration":
		if _, err := time.ParseDuration(v); err != nil {
			return errors.New(`want a duration such as "5s"`)
		}
	case "ip":
		return checkIP(v)
	case "ipSlice":
		return checkIPSlice(v)
	case "mapStringBool":
		return checkMapStringBool(v)
	case "Level":
		// klog's verbosity (--v) is an int32.
		return checkInt(v, 32)
	}

	return nil
}

// checkInt is pflag's int parsers: base prefixes (0x, 0o, 0b, 0) and
// underscores are allowed, as strconv.ParseInt(v, 0, bits) allows them.
func checkInt(v string, bits int) error {
	_, err := strconv.ParseInt(v, 0, bits)
	if err == nil {
		return nil
	}

	if errors.Is(err, strconv.ErrRange) {
		lo, hi := -(int64(1) << (bits - 1)), int64(1)<<(bits-1)-1
		return fmt.Errorf("want an integer from %d to %d", lo, hi)
	}

	return errors.New("want an integer")
}

func checkUint(v string, bits int) error {
	_, err := strconv.ParseUint(v, 0, bits)
	if err == nil {
		return nil
	}

	if errors.Is(err, strconv.ErrRange) {
		return fmt.Errorf("want an integer from 0 to %d", uint64(1)<<bits-1)
	}

	return errors.New("want a non-negative integer")
}

// checkIP accepts what either parser of an "ip" flag accepts: pflag's
// (net.ParseIP of the trimmed value) or Kubernetes' IPVar (the kubelet's
// --address, kube-proxy's --bind-address), which takes "" for unset and
// IPv4 parts with leading zeros, as netutils.ParseIPSloppy does.
func checkIP(v string) error {
	if v == "" || net.ParseIP(strings.TrimSpace(v)) != nil || net.ParseIP(unpadIPv4(v)) != nil {
		return nil
	}

	return errors.New(`want an IP address such as "10.0.0.1" or "fd00::1"`)
}

// unpadIPv4 drops leading zeros from the dotted IPv4 part of an address
// ("010.0.0.1", "::ffff:010.0.0.1"), which net.ParseIP refuses and
// Kubernetes' sloppy parser reads as decimal.
func unpadIPv4(v string) string {
	head, quad := "", v
	if i := strings.LastIndexByte(v, ':'); i >= 0 {
		head, quad = v[:i+1], v[i+1:]
	}

	parts := strings.Split(quad, ".")
	if len(parts) != 4 {
		return v
	}

	for i, p := range parts {
		if len(p) > 1 {
			parts[i] = strings.TrimLeft(p, "0")
			if parts[i] == "" {
				parts[i] = "0"
			}
		}
	}

	return head + strings.Join(parts, ".")
}

// checkIPSlice is pflag's ipSlice: brackets and quotes are dropped, then
// every comma-separated item must be an IP address; "" is the empty list.
func checkIPSlice(v string) error {
	v = strings.NewReplacer(`"`, "", "'", "", "`", "").Replace(strings.Trim(v, "[]"))
	if v == "" {
		return nil
	}

	for ip := range strings.SplitSeq(v, ",") {
		if net.ParseIP(strings.TrimSpace(ip)) == nil {
			return fmt.Errorf(`want comma-separated IP addresses such as "10.0.0.1,fd00::1": %q is not one`, strings.TrimSpace(ip))
		}
	}

	return nil
}

// checkMapStringBool is component-base's MapStringBool and feature gates'
// syntax: comma-separated key=bool pairs, empty items skipped. Whether a
// feature gate of that name exists is for the component to say.
func checkMapStringBool(v string) error {
	for item := range strings.SplitSeq(v, ",") {
		if item == "" {
			continue
		}

		k, b, ok := strings.Cut(item, "=")
		if !ok {
			return fmt.Errorf(`want key=true|false pairs such as "A=true,B=false": %q has no "="`, item)
		}

		if _, err := strconv.ParseBool(strings.TrimSpace(b)); err != nil {
			return fmt.Errorf(`want key=true|false pairs such as "A=true,B=false": %s=%q is not true or false`, strings.TrimSpace(k), strings.TrimSpace(b))
		}
	}

	return nil
}

// repeatableTypes are the flag types whose parser adds up the values of
// a flag given more than once (--flag=a --flag=b) instead of keeping the
// last: pflag's slices, arrays and maps (after the first occurrence
// replaces the default) and component-base's maps, multimaps, named
// certificate keys (--tls-sni-cert-key) and the kubelet's NUMA memory
// reservations (--reserved-memory). The kubelet's --register-with-taints
// ([]v1.Taint) reads a comma-separated list but replaces it each time,
// so it is not one of them.
var repeatableTypes = map[string]bool{
	"strings": true, "stringArray": true,
	"ints": true, "int32Slice": true, "int64Slice": true, "uints": true, "bools": true,
	"float32Slice": true, "float64Slice": true, "durationSlice": true, "ipSlice": true, "ipNetSlice": true,
	"stringToString": true, "stringToInt": true, "stringToInt64": true,
	"mapStringString": true, "mapStringBool": true, "colonSeparatedMultimapStringString": true,
	"namedCertKey": true, "reserved-memory": true,
}

// Repeatable reports whether the component takes the flag repeated, each
// value adding to the others; a flag of any other type keeps only its
// last value. The zero Flag (an unknown flag) is not repeatable.
func (f Flag) Repeatable() bool { return repeatableTypes[f.Type] }
