// The basaltic document's Go program ("Enviar y consumir mensajes", tab Go), as it is printed
// there (main.go). The module it imports, github.com/basaltic-sh/sdk-go, is this repository's
// sdk/go: the replace directive below points the program at it, so `go build` needs no module
// proxy. The other way is a vendored copy: `go mod vendor` with the replace in place copies
// sdk/go into vendor/, and the program then builds from vendor/ alone (see sdk/go/README.md).
module example.com/basaltic-send-receive

go 1.19

require github.com/basaltic-sh/sdk-go v0.0.0

replace github.com/basaltic-sh/sdk-go => ../../sdk/go
