package harness

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/jean2/jean2/provider"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/tool"
)

// sealOrphan is the result an orphan call gets: one whose result never came, because the
// server or the turn stopped while it was pending or running.
const sealOrphan = "the call was interrupted before it returned a result: it may not have run, or only in part; check before calling it again"

// sealCall ends a call that will not run (or did not finish) with an error result the
// model can read.
func sealCall(p *store.Part, why string) {
	p.Status = store.StatusError
	p.Error = why
	p.Result = string(tool.Result{Error: why}.ModelJSON())
}

// orphan names a tool-call part of the transcript that has no result.
type orphan struct{ msg, part int }

// transcript turns a session's messages into what the model is sent, repaired so that each
// tool call has exactly one result: a call without one is reported in orphans (and given a
// sealed error result in the request), a second result of a call is dropped, as are
// results of calls that are not there and a second call with the same id. Answers that
// broke off are left out; visualizations never go (a part's Result is the model's text).
// System messages join the system prompt. A user message's image parts go with it. After a
// compaction, the messages it summarized are left out and its summary joins the system
// prompt in their place.
func transcript(history []store.Message) (msgs []provider.Message, system []string, orphans []orphan) {
	summary, compacted, wasCompacted := lastCompaction(history)
	if wasCompacted {
		system = append(system, summaryPrompt(summary))
	}
	apart, calls := resultsApart(history)
	// A message each and one per call's result, allocated once: grown by appends, the
	// slice of a long session's request was copied about twice its size every request.
	msgs = make([]provider.Message, 0, len(history)+calls)
	seen := make(map[string]bool, calls) // call ids already in the request
	for mi, m := range history {
		if wasCompacted && m.Seq != 0 && m.Seq <= compacted.UpToSeq {
			continue
		}
		switch m.Role {
		case store.RoleSystem:
			if s := strings.TrimSpace(m.Content); s != "" {
				system = append(system, s)
			}
		case store.RoleUser:
			if um, ok := userForModel(m); ok {
				msgs = append(msgs, um)
			}
		case store.RoleAssistant:
			if m.Finish == finishDropped {
				continue
			}
			var text strings.Builder
			var calls []provider.ToolCall
			var results []provider.Message
			for pi, p := range m.Parts {
				switch p.Kind {
				case store.PartText:
					text.WriteString(p.Text)
				case store.PartToolCall:
					if p.CallID == "" || seen[p.CallID] {
						continue
					}
					seen[p.CallID] = true
					calls = append(calls, provider.ToolCall{ID: p.CallID, Name: p.ToolName, Args: argsForModel(p.Args)})
					res, isErr, ok := callResult(p)
					holder := p
					if !ok {
						if r, found := apart[p.CallID]; found {
							res, isErr, ok = r.Result, r.Status == store.StatusError, r.Result != ""
							holder = r
						}
					}
					if !ok {
						orphans = append(orphans, orphan{mi, pi})
						res, isErr = string(tool.Result{Error: sealOrphan}.ModelJSON()), true
					}
					msg := provider.Message{Role: provider.RoleTool, ToolCallID: p.CallID, Text: res, IsError: isErr}
					if ok {
						msg.Images = resultImages(holder)
					}
					results = append(results, msg)
				}
			}
			if text.Len() == 0 && len(calls) == 0 {
				continue
			}
			msgs = append(msgs, provider.Message{Role: provider.RoleAssistant, Text: text.String(), ToolCalls: calls})
			msgs = append(msgs, results...)
		}
	}
	return msgs, system, orphans
}

// userForModel is a person's message as the model gets it: its text with the resources
// attached to it joined, and its images; ok is false when nothing is left to send.
func userForModel(m store.Message) (provider.Message, bool) {
	var images []provider.Image
	text := m.Content
	for _, p := range m.Parts {
		if p.Kind == store.PartImage {
			images = append(images, provider.Image{MediaType: p.MediaType, Data: p.Data})
		}
		if r, ok := resourceOf(p); ok {
			block, img := resourceForModel(r)
			text = joinBlock(text, block)
			if img != nil {
				images = append(images, *img)
			}
		}
	}
	if strings.TrimSpace(text) == "" && len(images) == 0 {
		return provider.Message{}, false
	}
	return provider.Message{Role: provider.RoleUser, Text: text, Images: images}, true
}

// callResult is the result a tool-call part holds, if it holds one: a call that ended has
// its result on the same row.
func callResult(p store.Part) (text string, isErr, ok bool) {
	switch p.Status {
	case store.StatusComplete, store.StatusError:
	default:
		return "", false, false
	}
	isErr = p.Status == store.StatusError
	if p.Result != "" {
		return p.Result, isErr, true
	}
	if isErr {
		why := p.Error
		if why == "" {
			why = "the call failed"
		}
		return string(tool.Result{Error: why}.ModelJSON()), true, true
	}
	return string(tool.Result{Success: true}.ModelJSON()), false, true
}

// request builds the messages of the next model call from the turn's transcript, sealing
// the calls found without a result; the seals' writes, returned, go with the answer's first.
func (t *turn) request(system string) ([]provider.Message, string, ops) {
	msgs, extra, orphans := transcript(t.history)
	var seals ops
	for _, o := range orphans {
		p := &t.history[o.msg].Parts[o.part]
		sealCall(p, sealOrphan)
		seals.add(updatePartOp(*p, "seal orphan call "+p.CallID))
	}
	if len(extra) > 0 {
		system = strings.Join(append([]string{system}, extra...), "\n\n")
	}
	if len(orphans) > 0 {
		t.h.log.Warn(fmt.Sprintf("sealed %d orphan calls before the model call", len(orphans)), "session", t.sessionID, "turn", t.id)
	}
	return msgs, system, seals
}

// resourceForModel is how an attached resource reaches the model: a text resource as a
// block of the message's text that names its URI and server; an image the provider takes
// as an image beside a line naming it; other bytes as a note that they were attached but
// cannot be shown (their size and type), so the model knows what the person meant.
func resourceForModel(r Resource) (block string, img *provider.Image) {
	head := fmt.Sprintf("<resource server=%q uri=%q", r.Server, r.URI)
	if r.Path != "" {
		// A workspace file the person mentioned (@path).
		head = fmt.Sprintf("<file path=%q", r.Path)
	}
	tail := "</resource>"
	if r.Path != "" {
		tail = "</file>"
	}
	if r.MimeType != "" {
		head += fmt.Sprintf(" mimeType=%q", r.MimeType)
	}
	switch {
	case r.Blob == nil:
		return head + ">\n" + r.Text + "\n" + tail, nil
	case store.CheckImage(r.MimeType, r.Blob) == nil:
		return head + " /> (the image below)", &provider.Image{MediaType: r.MimeType, Data: r.Blob}
	default:
		return fmt.Sprintf("%s /> (%d bytes of binary data, attached by the person but not shown to you: only text and PNG, JPEG, GIF or WebP images can be)", head, len(r.Blob)), nil
	}
}

// joinBlock adds block to text, a blank line between them.
func joinBlock(text, block string) string {
	if strings.TrimSpace(text) == "" {
		return block
	}
	return text + "\n\n" + block
}

// resultImages are the images a tool part kept of its result's content
// (store.ToolContentType), for the model. Whether the model is given them or a line saying
// what they were is the provider's business (provider.Message.Images, Config.NoImages).
func resultImages(p store.Part) []provider.Image {
	if p.MediaType != store.ToolContentType || len(p.Data) == 0 {
		return nil
	}
	var content []tool.Content
	if json.Unmarshal(p.Data, &content) != nil {
		return nil
	}
	var images []provider.Image
	for _, c := range content {
		if c.Type == tool.ContentImage && slices.Contains(tool.ImageTypes, c.MIMEType) {
			images = append(images, provider.Image{MediaType: c.MIMEType, Data: c.Bytes()})
		}
	}
	return images
}

// resultsApart are the results that arrived apart from their calls, the first one per call
// id, and how many calls the history holds.
func resultsApart(history []store.Message) (apart map[string]store.Part, calls int) {
	apart = map[string]store.Part{}
	for _, m := range history {
		for _, p := range m.Parts {
			if p.Kind == store.PartToolCall {
				calls++
			}
			if p.Kind == store.PartToolResult && p.CallID != "" {
				if _, dup := apart[p.CallID]; !dup {
					apart[p.CallID] = p
				}
			}
		}
	}
	return apart, calls
}
