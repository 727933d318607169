//go:build failing

package main

// The failing variant: run with test_command "go test -v -tags failing ./...".

import "testing"

func TestAddIsWrongOnPurpose(t *testing.T) {
	var body map[string]int
	getJSON(t, "/add?a=2&b=2", &body)
	if body["sum"] != 5 {
		t.Fatalf("expected 5, got %d", body["sum"])
	}
}
