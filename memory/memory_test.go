package memory

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestEdit(t *testing.T) {
	hand := "# Mine\nI like tabs.\n"
	cases := []struct {
		name, text string
		ch         Change
		want, err  string
	}{
		{"add to empty", "", Change{Action: "add", Content: " fact one "}, "fact one\n", ""},
		{"add after hand text", hand, Change{Action: "add", Content: "fact"}, hand + "§\nfact\n", ""},
		{"add a duplicate", "a\n§\nfact\n", Change{Action: "add", Content: "fact"}, "", "already holds"},
		{"add a separator", "", Change{Action: "add", Content: "a\n§\nb"}, "", "separates entries"},
		{"replace inside hand text keeps the rest", hand, Change{Action: "replace", Old: "tabs", Content: "spaces"}, "# Mine\nI like spaces.\n", ""},
		{"replace missing", hand, Change{Action: "replace", Old: "vim", Content: "x"}, "", "not in"},
		{"replace ambiguous", "a a\n", Change{Action: "replace", Old: "a", Content: "x"}, "", "2 times"},
		{"remove the last entry", hand + "§\nfact\n", Change{Action: "remove", Old: "fact"}, hand, ""},
		{"remove a middle entry", "a\n§\nb\n§\nc\n", Change{Action: "remove", Old: "b"}, "a\n§\nc\n", ""},
		{"remove the first entry", "a\n§\nb\n", Change{Action: "remove", Old: "a"}, "b\n", ""},
		{"over the cap", "", Change{Action: "add", Content: strings.Repeat("x", 100)}, "", "cap of 50"},
		{"unknown", "", Change{Action: "wipe"}, "", "unknown action"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := edit(c.text, c.ch, 50, "MEMORY.md")
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("edit = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

// Many changes at once (two processes' worth of goroutines) all land: none is lost to
// another's write, and the hand-written text stays.
func TestApplyConcurrent(t *testing.T) {
	home := t.TempDir()
	hand := "Written by hand.\n"
	if err := os.WriteFile(filepath.Join(home, MemoryFile), []byte(hand), 0o600); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := Apply(context.Background(), home, Change{Action: "add", Content: fmt.Sprintf("fact %d", i)}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	data, _ := os.ReadFile(filepath.Join(home, MemoryFile))
	if !strings.HasPrefix(string(data), hand) {
		t.Fatalf("the hand-written text is gone: %q", data)
	}
	for i := range 20 {
		if !strings.Contains(string(data), fmt.Sprintf("fact %d\n", i)) {
			t.Errorf("fact %d was lost: %q", i, data)
		}
	}
}

// The prompt holds each file up to its cap, with a note where it was cut.
func TestPromptCapped(t *testing.T) {
	home := t.TempDir()
	big := strings.Repeat("Q", MaxUserBytes+100)
	os.WriteFile(filepath.Join(home, UserFile), []byte(big), 0o600)
	os.WriteFile(filepath.Join(home, MemoryFile), []byte("note\n"), 0o600)
	p := Prompt(home)
	if strings.Count(p, "Q") > MaxUserBytes+10 || !strings.Contains(p, "[cut at 4096 bytes") || !strings.Contains(p, "note") {
		t.Fatalf("prompt (%d bytes): %.300s", len(p), p)
	}
	if Prompt(t.TempDir()) != "" {
		t.Fatal("a home without memory files has a memory prompt")
	}
}

// A person saves the file while the tool makes its change: the change is made again from
// what they saved, and both are in the file.
func TestApplyKeepsAnEditMadeMeanwhile(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, MemoryFile)
	if err := os.WriteFile(path, []byte("First line by hand.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	saves := 0
	_, _, err := apply(context.Background(), home, Change{Action: "add", Content: "A fact."}, func() {
		if saves == 0 {
			saves++
			if err := os.WriteFile(path, []byte("First line by hand.\nSecond line, saved meanwhile.\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if want := "First line by hand.\nSecond line, saved meanwhile.\n§\nA fact.\n"; string(data) != want {
		t.Fatalf("MEMORY.md = %q, want %q", data, want)
	}
}
