module example.com/petri-go-http

go 1.21
