//go:build !darwin

package sandbox

import "errors"

// SeatbeltAvailable reports that there is no Seatbelt outside macOS.
func SeatbeltAvailable() error { return errors.New("Seatbelt exists only on macOS") }
