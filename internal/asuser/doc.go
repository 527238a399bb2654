// Package asuser runs a test binary's own tests again as an ordinary user, so that what a
// root jean2 is tested for is tested for an ordinary user's too (the sandbox takes another
// way there: a user namespace). Linux only: elsewhere the package is empty.
package asuser
