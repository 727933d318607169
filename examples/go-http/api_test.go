package main

// Runs against the server Petri started (127.0.0.1:8080 in the same sandbox).

import (
	"encoding/json"
	"net/http"
	"testing"
)

func getJSON(t *testing.T, path string, into any) {
	t.Helper()
	response, err := http.Get("http://127.0.0.1:8080" + path)
	if err != nil {
		t.Fatal(err)
	}
	defer response.Body.Close()
	if err := json.NewDecoder(response.Body).Decode(into); err != nil {
		t.Fatal(err)
	}
}

func TestHealth(t *testing.T) {
	var body map[string]string
	getJSON(t, "/health", &body)
	if body["status"] != "ok" {
		t.Fatalf("health: %v", body)
	}
}

func TestAdd(t *testing.T) {
	var body map[string]int
	getJSON(t, "/add?a=2&b=3", &body)
	if body["sum"] != 5 {
		t.Fatalf("sum: %v", body)
	}
}
