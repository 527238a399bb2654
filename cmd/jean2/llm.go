package main

import (
	"fmt"

	"github.com/jean2/jean2/server"
	"github.com/jean2/jean2/tool"
)

// cliLLM is ctx.llm for the commands that run tools outside a server (jean2 tools run,
// jean2 mcp, …): the providers jean2 serve would use — $JEAN2_HOME/providers.json and the
// environment — resolved at each request, the default provider and model. A
// providers.json that does not load is said once and leaves ctx.llm saying why. With no
// provider at all, nil: under jean2 mcp the client's own model then serves ctx.llm
// (sampling), as before.
func cliLLM(e env, home string) tool.LLM {
	p, err := server.LoadProviders(home, e.getenv, nil)
	if err != nil {
		fmt.Fprintf(e.stderr, "jean2: ctx.llm has no provider: %v\n", err)
		return nil
	}
	if len(p.Set().Providers) == 0 {
		return nil
	}
	return p.LLM("", "")
}
