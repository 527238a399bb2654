//go:build !unix

package mcpserver

import "os"

// pollable polls nothing on this system: stdio is read and written as given.
func pollable(any) (*os.File, func()) { return nil, nil }
