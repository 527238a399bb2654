//go:build race

package sandbox

// raceBuild: this test binary, which is also the launcher the tests start, carries the race
// detector (its runtime needs far more memory than the jean2 binary's).
const raceBuild = true
