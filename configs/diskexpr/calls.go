package diskexpr

// The functions and methods an expression may call.

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// method is a string's startsWith, endsWith, contains or matches.
func (p *parser) method(recv *node, name token) (*node, error) {
	fn := map[string]func(s, arg string) (bool, error){
		"startsWith": func(s, a string) (bool, error) { return strings.HasPrefix(s, a), nil },
		"endsWith":   func(s, a string) (bool, error) { return strings.HasSuffix(s, a), nil },
		"contains":   func(s, a string) (bool, error) { return strings.Contains(s, a), nil },
		"matches":    matchRegexp,
	}[name.text]

	if fn == nil {
		return nil, fmt.Errorf("at %d: %s() is not a method talosbox reads (startsWith, endsWith, contains, matches)", name.pos+1, name.text)
	}

	args, err := p.args(")")
	if err != nil {
		return nil, err
	}

	if recv.typ != typString || len(args) != 1 || args[0].typ != typString {
		return nil, fmt.Errorf("at %d: %s() is a string's method taking one string", name.pos+1, name.text)
	}

	arg := args[0]

	if name.text == "matches" && arg.konst {
		// A literal pattern, as in every selector worth writing, is
		// compiled once, here, and so checked with the config.
		pat, _ := arg.eval(Env{}) //nolint:errcheck // a literal

		re, err := regexp.Compile(pat.(string)) //nolint:forcetypeassert // typed
		if err != nil {
			return nil, fmt.Errorf("at %d: matches(): %w", name.pos+1, err)
		}

		fn = func(s, _ string) (bool, error) { return re.MatchString(s), nil }
	}

	return &node{typ: typBool, eval: func(env Env) (any, error) {
		s, a, err := both(env, recv, arg)
		if err != nil {
			return nil, err
		}

		return fn(s.(string), a.(string)) //nolint:forcetypeassert // typed
	}}, nil
}

func matchRegexp(s, pattern string) (bool, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return false, fmt.Errorf("matches(): %w", err)
	}

	return re.MatchString(s), nil
}

// call is glob(pattern, s), uint(x) or int(x).
func (p *parser) call(name token) (*node, error) {
	args, err := p.args(")")
	if err != nil {
		return nil, err
	}

	switch name.text {
	case "glob":
		if len(args) != 2 || args[0].typ != typString || args[1].typ != typString {
			return nil, fmt.Errorf("at %d: glob() takes a pattern and a string", name.pos+1)
		}

		pat, s := args[0], args[1]

		return &node{typ: typBool, eval: func(env Env) (any, error) {
			a, b, err := both(env, pat, s)
			if err != nil {
				return nil, err
			}

			return Glob(a.(string), b.(string)), nil //nolint:forcetypeassert // typed
		}}, nil
	case "uint", "int":
		if len(args) != 1 || (args[0].typ != typInt && args[0].typ != typUint) {
			return nil, fmt.Errorf("at %d: %s() converts one number", name.pos+1, name.text)
		}

		return convert(name.text, args[0]), nil
	}

	hint := ""
	if name.text == "u64" || name.text == "uint64" {
		hint = ": CEL converts with uint(...), or write a uint literal, 100u"
	}

	return nil, fmt.Errorf("at %d: %s() is not a function talosbox reads (glob, uint, int)%s", name.pos+1, name.text, hint)
}

func convert(to string, arg *node) *node {
	t := map[string]typ{"uint": typUint, "int": typInt}[to]

	return &node{typ: t, konst: arg.konst, eval: func(env Env) (any, error) {
		v, err := arg.eval(env)
		if err != nil {
			return nil, err
		}

		switch x := v.(type) {
		case int64:
			if t == typInt {
				return x, nil
			}

			if x < 0 {
				return nil, errors.New("uint() of a negative number")
			}

			return uint64(x), nil
		case uint64:
			if t == typUint {
				return x, nil
			}

			if x > 1<<63-1 {
				return nil, errors.New("int() overflow")
			}

			return int64(x), nil
		}

		return nil, fmt.Errorf("%s() of a %T", to, v)
	}}
}
