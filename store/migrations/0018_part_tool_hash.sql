-- The content hash of the tool version that ran a tool call (folder tools; '' for others
-- and for calls stored before): a grant given from the call's refusal goes to that very
-- version, and a tool changed since is refused rather than granted unseen.
ALTER TABLE parts ADD COLUMN tool_hash TEXT NOT NULL DEFAULT '';
