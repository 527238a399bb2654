package mcpclient

import (
	"fmt"
	"iter"
)

// maxListed bounds what one listing of a server (its tools, prompts, resources or
// templates) keeps. The go-sdk follows a server's next cursor for as long as it gives one,
// and a server on the internet (which nothing confines) or a confined one could give one
// forever: jean2 kept 50,000 tools and 50,000 prompts from 100 pages in under 5 s, each
// tool offered to the model (TestAttackEndlessListFromServer). Servers people use list
// tens, at most hundreds.
const maxListed = 10_000

// listAll collects what seq lists; a listing past maxListed is stopped (no further page is
// asked for) and refused, what names it.
func listAll[T any](seq iter.Seq2[T, error], what string) ([]T, error) {
	var out []T
	for v, err := range seq {
		if err != nil {
			return nil, err
		}
		if len(out) == maxListed {
			return nil, fmt.Errorf("more than %d %s, which jean2 does not keep", maxListed, what)
		}
		out = append(out, v)
	}
	return out, nil
}
