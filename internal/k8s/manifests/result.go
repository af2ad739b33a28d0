package manifests

import "slices"

// Merge folds next, a retry's result for the same manifests, into r: an
// object an earlier run created or updated stays so although the retry
// found it unchanged, pruned objects add up, and Applied and Kept are the
// retry's (what is true now).
func (r Result) Merge(next Result) Result {
	// state ranks what happened to an object: the most that did wins.
	const (
		unchanged = iota + 1
		updated
		created
	)

	state := map[string]int{}
	var order []string

	note := func(objs []string, s int) {
		for _, o := range objs {
			if _, seen := state[o]; !seen {
				order = append(order, o)
			}

			state[o] = max(state[o], s)
		}
	}

	for _, res := range []Result{r, next} {
		note(res.Created, created)
		note(res.Updated, updated)
		note(res.Unchanged, unchanged)
	}

	out := Result{Applied: next.Applied}

	for _, o := range order {
		switch state[o] {
		case created:
			out.Created = append(out.Created, o)
		case updated:
			out.Updated = append(out.Updated, o)
		default:
			out.Unchanged = append(out.Unchanged, o)
		}
	}

	out.Pruned = append(slices.Clip(r.Pruned), next.Pruned...)
	for _, o := range next.Kept {
		if !slices.Contains(out.Pruned, o) {
			out.Kept = append(out.Kept, o)
		}
	}

	return out
}
