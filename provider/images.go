package provider

import (
	"fmt"

	"github.com/jean2/jean2/tool"
)

// imageStandIn is the line that takes an image's place for a model that is not given it.
func imageStandIn(img Image, why string) string {
	return fmt.Sprintf("[%s %s: %s]", img.MediaType, tool.SizeText(len(img.Data)), why)
}

// withoutImages is msgs with each image replaced by a line saying what it was, for a model
// that takes none (Config.NoImages): a text-only model's server refuses a request with one.
func withoutImages(msgs []Message) []Message {
	out := msgs
	copied := false
	for i, m := range msgs {
		if len(m.Images) == 0 {
			continue
		}
		if !copied {
			out = append([]Message(nil), msgs...)
			copied = true
		}
		text := m.Text
		for _, img := range m.Images {
			if text != "" {
				text += "\n"
			}
			text += imageStandIn(img, "not shown to this model")
		}
		out[i].Text, out[i].Images = text, nil
	}
	return out
}
