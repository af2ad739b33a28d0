package configs

import (
	"fmt"
	"math/big"
	"strings"
)

// quantitySuffixes are the multipliers of Kubernetes resource quantities
// (k8s.io/apimachinery/pkg/api/resource): binary, then decimal SI.
var quantitySuffixes = map[string]*big.Rat{
	"Ki": pow(2, 10), "Mi": pow(2, 20), "Gi": pow(2, 30), "Ti": pow(2, 40), "Pi": pow(2, 50), "Ei": pow(2, 60),
	"n": new(big.Rat).SetFrac64(1, 1_000_000_000), "u": new(big.Rat).SetFrac64(1, 1_000_000), "m": new(big.Rat).SetFrac64(1, 1000),
	"": big.NewRat(1, 1), "k": pow(10, 3), "M": pow(10, 6), "G": pow(10, 9), "T": pow(10, 12), "P": pow(10, 15), "E": pow(10, 18),
}

func pow(base, exp int64) *big.Rat {
	return new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(base), big.NewInt(exp), nil))
}

// ParseQuantity reads a Kubernetes resource quantity ("250m", "1.5",
// "512Mi", "1e3") as the API server does, exactly.
func ParseQuantity(s string) (*big.Rat, error) {
	bad := fmt.Errorf("invalid quantity %q: want a number with an optional suffix such as 250m, 0.5, 512Mi or 2G", s)

	if s == "" || len(s) > 64 {
		return nil, bad
	}

	num, suffix := s, ""

	// The number is [+-]digits[.digits]; what follows is the suffix, or
	// an exponent (e3, E-2).
	end := 0
	if num[0] == '+' || num[0] == '-' {
		end = 1
	}

	for end < len(num) && (num[end] >= '0' && num[end] <= '9' || num[end] == '.') {
		end++
	}

	num, suffix = s[:end], s[end:]

	if num == "" || num == "+" || num == "-" || strings.Count(num, ".") > 1 || strings.HasSuffix(num, ".") && len(num) == 1 {
		return nil, bad
	}

	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return nil, bad
	}

	if mult, ok := quantitySuffixes[suffix]; ok {
		return r.Mul(r, mult), nil
	}

	if suffix[0] != 'e' && suffix[0] != 'E' {
		return nil, bad
	}

	exp, ok := new(big.Int).SetString(suffix[1:], 10)
	if !ok || !exp.IsInt64() || exp.Int64() > 30 || exp.Int64() < -30 {
		return nil, bad
	}

	e := exp.Int64()
	if e >= 0 {
		return r.Mul(r, pow(10, e)), nil
	}

	return r.Quo(r, pow(10, -e)), nil
}

// quantityOf reads a free-form quantity value: a string or a YAML number.
func quantityOf(v any) (*big.Rat, string, error) {
	var s string

	switch t := v.(type) {
	case string:
		s = t
	case int, int64, uint64, float64:
		s = fmt.Sprint(t)
	default:
		return nil, fmt.Sprint(v), fmt.Errorf("invalid quantity %v: want a number or a string such as 250m or 512Mi", v)
	}

	q, err := ParseQuantity(s)

	return q, s, err
}

// ComponentResources are the requests talosbox gives each control-plane
// component when the config sets none, as Talos does: the renderer and
// validation's limit >= request check share them.
var ComponentResources = map[string]map[string]string{
	"apiServer":         {"cpu": "200m", "memory": "512Mi"},
	"controllerManager": {"cpu": "50m", "memory": "256Mi"},
	"scheduler":         {"cpu": "10m", "memory": "64Mi"},
}

// componentResources checks a control-plane component's resources: only
// cpu and memory (Talos's rule), valid quantities, nothing negative, and
// every limit at least the request the pod will have (the kubelet refuses
// a pod whose limit is below its request).
func (v *validator) componentResources(section string, r *ResourcesConfig) {
	if r == nil {
		return
	}

	p := "cluster." + section + ".resources"
	type request struct {
		q *big.Rat
		s string
	}

	req := map[string]request{}

	for _, k := range []string{"cpu", "memory"} {
		s := ComponentResources[section][k]
		if q, err := ParseQuantity(s); err == nil {
			req[k] = request{q, s + ", talosbox's default"}
		}
	}

	for _, part := range []struct {
		name   string
		values Unstructured
	}{{"requests", r.Requests}, {"limits", r.Limits}} {
		for _, k := range sortedKeys(part.values) {
			kp := keyPath(p+"."+part.name, k)

			if k != "cpu" && k != "memory" {
				v.errorf(kp, "unsupported pod resource %q: only cpu and memory can be set", k)

				continue
			}

			q, s, err := quantityOf(part.values[k])

			switch {
			case err != nil:
				v.errorf(kp, "%v", err)

				continue
			case q.Sign() < 0:
				v.errorf(kp, "%s must not be negative", s)

				continue
			}

			if part.name == "requests" {
				req[k] = request{q, s}

				continue
			}

			if rq, ok := req[k]; ok && q.Cmp(rq.q) < 0 {
				v.errorf(kp, "the %s limit %s is below the request (%s): the kubelet would refuse the pod", k, s, rq.s)
			}
		}
	}
}
