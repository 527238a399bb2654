package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"time"

	"github.com/jean2/jean2/chat"
	"github.com/jean2/jean2/server"
)

const signinUsage = `Usage:
  jean2 signin [--server URL] [--open]

Prints a one-time address that signs a browser in to the running jean2 server: opened
within an hour, it sets the server's cookie and shows the web client. The API token is
read from $JEAN2_TOKEN, else from $JEAN2_HOME/token (written by jean2 serve).

  --server URL  the jean2 server (default $JEAN2_SERVER, else the server running on this
                $JEAN2_HOME, on whatever port ($JEAN2_HOME/server.json), else
                http://127.0.0.1:8742)
  --open        also open the address in the desktop's browser (xdg-open)
`

// signin runs `jean2 signin`.
func signin(ctx context.Context, e env, args []string) error {
	fs := newFlags("signin", e)
	serverFlag := fs.String("server", "", "the jean2 server's URL")
	openFlag := fs.Bool("open", false, "open the address in the browser")
	if help, err := parseFlags(fs, e, args, signinUsage, ""); help || err != nil {
		return err
	}
	base, _, err := serverBase(e, *serverFlag)
	if err != nil {
		return err
	}
	if err := chat.CheckServerURL(base); err != nil {
		return usagef("--server %s: %v", base, err)
	}
	token, err := clientToken(e)
	if err != nil {
		return err
	}
	if token == "" {
		return fmt.Errorf("no API token here: $JEAN2_HOME/%s is missing (jean2 serve writes it at its first start) and JEAN2_TOKEN is not set", server.TokenFile)
	}
	api := chat.NewClient(base, token)
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var code struct {
		Path string `json:"path"`
	}
	if err := api.Call(cctx, http.MethodPost, "/api/auth/codes", map[string]any{}, &code); err != nil {
		var ae *chat.APIError
		if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized {
			return fmt.Errorf("the jean2 server at %s does not take this token (is it another $JEAN2_HOME's server?): %w", base, err)
		}
		return fmt.Errorf("no jean2 server answers at %s: %w (start one with jean2 serve)", base, err)
	}
	addr := api.Base() + code.Path
	fmt.Fprintln(e.stdout, addr)
	if *openFlag {
		if err := exec.CommandContext(ctx, "xdg-open", addr).Start(); err != nil {
			fmt.Fprintf(e.stderr, "jean2 signin: could not open a browser (%v); open the address above yourself\n", err)
		}
	}
	return nil
}
