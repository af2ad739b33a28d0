package configs

import (
	"errors"
	"fmt"
	"strings"
)

// ModuleParams joins a machine.kernel.modules entry's "key=value"
// parameters into the single string the kernel parses: the rule for both
// validation and the boot that loads the module (internal/kmod). The
// kernel splits on whitespace unless it is inside double quotes and has no
// escape for a quote inside a value, so values with spaces are quoted and
// values with stray quotes refused.
func ModuleParams(params []string) (string, error) {
	out := make([]string, 0, len(params))

	for _, p := range params {
		p = strings.TrimSpace(p)
		if p == "" {
			return "", errors.New("empty parameter")
		}

		key, val, hasVal := strings.Cut(p, "=")
		if key == "" || strings.ContainsAny(key, " \t\n\"") {
			return "", fmt.Errorf("parameter %q: invalid name %q", p, key)
		}

		if !hasVal {
			// A bare name sets a boolean parameter.
			out = append(out, key)
			continue
		}

		if strings.ContainsAny(val, "\n\x00") {
			return "", fmt.Errorf("parameter %q: the value holds a newline or NUL", p)
		}

		inner := val
		if len(val) >= 2 && val[0] == '"' && val[len(val)-1] == '"' {
			inner = val[1 : len(val)-1]
		}

		if strings.Contains(inner, `"`) {
			return "", fmt.Errorf("parameter %q: the kernel cannot take a double quote inside a value", p)
		}

		if inner == val && strings.ContainsAny(val, " \t") {
			val = `"` + val + `"`
		}

		out = append(out, key+"="+val)
	}

	return strings.Join(out, " "), nil
}
