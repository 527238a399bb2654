package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/jean2/jean2/store"
)

// compactionLine is how the chat shows a compaction part.
func compactionLine(p store.Part) string {
	var ci store.CompactionInfo
	_ = json.Unmarshal([]byte(p.Args), &ci)
	how := ""
	if ci.Manual {
		how = " (asked for)"
	}
	line := fmt.Sprintf("Context compacted: %d messages summarized%s", ci.Messages, how)
	if ci.TokensBefore > 0 {
		line += fmt.Sprintf(", about %d → %d tokens", ci.TokensBefore, ci.TokensAfter)
	}
	return line
}

// compact asks the server to summarize the session's older messages now (/compact). The
// compaction itself is shown when its message.created arrives.
func (u *chatUI) compact() {
	u.println(u.st.dim("Compacting the conversation…"))
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		ctx, cancel := context.WithTimeout(u.ctx, 10*time.Minute)
		defer cancel()
		err := u.api.call(ctx, http.MethodPost, "/api/sessions/"+url.PathEscape(u.ses.ID)+"/compact", nil, nil)
		if err != nil && u.ctx.Err() == nil {
			fmt.Fprintf(u.out, "%s\n", u.st.red("jean2 chat: compact: "+err.Error()))
		}
	}()
}
