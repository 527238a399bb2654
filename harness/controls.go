package harness

import (
	"context"
	"errors"
	"fmt"

	"github.com/jean2/jean2/provider"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/undo"
)

// EventMessagesCut announces that a session's conversation was cut back: the messages from
// seq FromSeq on are gone (MessagesCut). Clients drop them and read on.
const EventMessagesCut = "messages.cut"

// MessagesCut is the payload of messages.cut.
type MessagesCut struct {
	MessageID string `json:"messageId"` // the first message removed
	FromSeq   int64  `json:"fromSeq"`
	Count     int64  `json:"count"`
	Reason    string `json:"reason"` // "edit" or "regenerate"
}

// ErrNotUserMessage is returned by Resend for a message that is not a person's.
var ErrNotUserMessage = errors.New("only a user message can be edited and sent again")

// ResendOptions say how Resend treats the files.
type ResendOptions struct {
	// Restore puts the workspace's files back as they were before the message first
	// ("Restore to here"), with these options; a refused restore stops everything.
	Restore *undo.RestoreOptions
	// Reason names the control in messages.cut: "edit" (default) or "regenerate".
	Reason string
}

// ResendResult is what Resend did.
type ResendResult struct {
	Turn     TurnInfo     `json:"turn"`
	Cut      MessagesCut  `json:"cut"`
	Restored *undo.Report `json:"restored,omitempty"`
}

// Resend edits and sends again: the conversation is cut back to before user message
// messageID (it and everything after it are removed) and a turn starts on in, continuing
// from there. The session is held for it from the first step to the turn's start, so no
// other turn comes between. ErrBusy while a turn runs.
func (h *Harness) Resend(ctx context.Context, sessionID, messageID string, in Input, opts ResendOptions) (ResendResult, error) {
	var res ResendResult
	if err := checkInput(in); err != nil {
		return res, fmt.Errorf("send message %s again: %w", messageID, err)
	}
	if opts.Reason == "" {
		opts.Reason = "edit"
	}
	msg, err := h.opts.Store.Message(ctx, messageID)
	if err != nil || msg.SessionID != sessionID {
		return res, fmt.Errorf("message %s is not in session %s: %w", messageID, sessionID, store.ErrNotFound)
	}
	if msg.Role != store.RoleUser {
		return res, fmt.Errorf("message %s is the %s's: %w", messageID, msg.Role, ErrNotUserMessage)
	}
	if err := h.reserve(ctx, sessionID); err != nil {
		return res, err
	}
	launched := false
	defer func() {
		if !launched {
			h.release(sessionID, nil)
			h.sendQueued(sessionID) // a message queued meanwhile goes once the session is free
		}
	}()
	if opts.Restore != nil {
		if h.opts.Snapshots == nil {
			return res, ErrNoSnapshots
		}
		report, err := h.opts.Snapshots.Restore(ctx, h.opts.Store, sessionID, messageID, *opts.Restore)
		if err != nil {
			return res, fmt.Errorf("restore session %s to message %s: %w", sessionID, messageID, err)
		}
		res.Restored = &report
		h.emitter(sessionID).emit(context.WithoutCancel(ctx), newEvent(EventRestoreDone, RestoreDone{MessageID: messageID, Report: report}))
	}
	res.Cut = MessagesCut{MessageID: messageID, FromSeq: msg.Seq, Reason: opts.Reason}
	err = h.emitter(sessionID).commit(ctx, ops{func(ctx context.Context, tx *store.Tx) ([]store.NewEvent, error) {
		n, err := tx.CutMessagesFrom(ctx, sessionID, msg.Seq)
		if err != nil {
			return nil, err
		}
		res.Cut.Count = n
		return []store.NewEvent{newEvent(EventMessagesCut, res.Cut)}, nil
	}})
	if err != nil {
		return res, fmt.Errorf("cut session %s back to before message %s: %w", sessionID, messageID, err)
	}
	// The transcript kept between turns holds what was cut.
	h.hist.take(sessionID)
	launched = true
	res.Turn, err = h.launch(ctx, sessionID, in)
	if err != nil {
		return res, fmt.Errorf("the conversation was cut back, but the new message was not sent: %w", err)
	}
	return res, nil
}

// Regenerate answers the session's last user message again: its answer and what followed
// are removed and the same message (text and images) is sent again.
func (h *Harness) Regenerate(ctx context.Context, sessionID string, restore *undo.RestoreOptions) (ResendResult, error) {
	msgs, err := h.opts.Store.ListMessages(ctx, sessionID)
	if err != nil {
		return ResendResult{}, fmt.Errorf("regenerate in session %s: %w", sessionID, err)
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role != store.RoleUser {
			continue
		}
		in := Input{Text: m.Content}
		for _, p := range m.Parts {
			if p.Kind == store.PartImage {
				in.Images = append(in.Images, provider.Image{MediaType: p.MediaType, Data: p.Data})
			}
			if r, ok := resourceOf(p); ok {
				in.Resources = append(in.Resources, r)
			}
		}
		return h.Resend(ctx, sessionID, m.ID, in, ResendOptions{Restore: restore, Reason: "regenerate"})
	}
	return ResendResult{}, fmt.Errorf("session %s has no message to answer again: %w", sessionID, store.ErrNotFound)
}

// Fork makes a new session in the same workspace holding the conversation up to and with
// message messageID (copies; the original is untouched). The fork's files are the
// workspace's as they are now; Restore to here stays with the original.
func (h *Harness) Fork(ctx context.Context, sessionID, messageID, title string) (store.Session, error) {
	msg, err := h.opts.Store.Message(ctx, messageID)
	if err != nil || msg.SessionID != sessionID {
		return store.Session{}, fmt.Errorf("message %s is not in session %s: %w", messageID, sessionID, store.ErrNotFound)
	}
	ses, err := h.opts.Store.ForkSession(ctx, sessionID, msg.Seq, title)
	if err != nil {
		return store.Session{}, err
	}
	return ses, nil
}
