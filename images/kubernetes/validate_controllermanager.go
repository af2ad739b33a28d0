//go:build ignore

// kube-config-validate's kube-controller-manager part (validate.go).
package main

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	kcmoptions "k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
)

// controllerManagerProblems parses args into kube-controller-manager's own
// options and runs their Validate with its own controller list, as its
// command does before it starts; a refusal that names no flag is the flag's
// whose absence clears it.
func controllerManagerProblems(args []string) []problem {
	all := controllerManagerChecks(args)

	out := make([]problem, 0, len(all))

	for _, msg := range all {
		field := flagOf(msg, args)

		if field == "" {
			var owners []string

			for i, a := range args {
				left := controllerManagerChecks(slices.Delete(slices.Clone(args), i, i+1))
				if !slices.Contains(left, msg) {
					owners = append(owners, strings.TrimLeft(a[:max(strings.IndexByte(a, '='), 0)], "-"))
				}
			}

			if len(owners) == 1 {
				field = owners[0]
			}
		}

		out = append(out, problem{Field: field, Msg: msg})
	}

	return out
}

func controllerManagerChecks(args []string) []string {
	s, err := kcmoptions.NewKubeControllerManagerOptions()
	if err != nil {
		return []string{err.Error()}
	}

	all, disabled, aliases := controllermanager.KnownControllers(), controllermanager.ControllersDisabledByDefault(), controllermanager.ControllerAliases()

	fs := pflag.NewFlagSet("kube-controller-manager", pflag.ContinueOnError)
	fs.SetOutput(discard{})

	for _, f := range s.Flags(all, disabled, aliases).FlagSets {
		fs.AddFlagSet(f)
	}

	if err := fs.Parse(args); err != nil {
		return []string{err.Error()}
	}

	err = s.Validate(all, disabled, aliases)
	if err == nil {
		return nil
	}

	var errs []error

	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		errs = utilerrors.Flatten(agg).Errors()
	} else {
		errs = []error{err}
	}

	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Error())
	}

	return out
}

// flagOf finds which flag a refusal names: the flag itself (--name), or the
// quoted value of exactly one of them.
func flagOf(msg string, args []string) string {
	var byValue []string

	for _, a := range args {
		name, value, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.Contains(msg, "--"+name) {
			return name
		}

		for v := range strings.SplitSeq(value, ",") {
			v = strings.TrimPrefix(strings.TrimSpace(v), "-")
			if v != "" && strings.Contains(msg, strconv.Quote(v)) {
				byValue = append(byValue, name)

				break
			}
		}
	}

	if len(byValue) == 1 {
		return byValue[0]
	}

	return ""
}
