// A small net/http service, tested through Petri's test mode (see README.md).
package main

import (
	"encoding/json"
	"log"
	"net/http"
	"strconv"
)

func add(w http.ResponseWriter, r *http.Request) {
	a, errA := strconv.Atoi(r.URL.Query().Get("a"))
	b, errB := strconv.Atoi(r.URL.Query().Get("b"))
	if errA != nil || errB != nil {
		http.Error(w, "a and b must be integers", http.StatusBadRequest)
		return
	}
	json.NewEncoder(w).Encode(map[string]int{"sum": a + b})
}

func main() {
	http.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"status": "ok"})
	})
	http.HandleFunc("/add", add)
	log.Println("listening on 8080")
	log.Fatal(http.ListenAndServe("127.0.0.1:8080", nil))
}
