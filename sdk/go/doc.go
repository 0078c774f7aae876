// Package basaltic is the Go client of the basaltic queue API that sqs-gateway serves: the
// "Go" tab of the document "Enviar y consumir mensajes" imports it as
//
//	basaltic "github.com/basaltic-sh/sdk-go"
//
// It exists to hold what every service client of the API shares: where the gateway is, the
// API key that calls it, the account and region, the HTTP client and the retry policy. Those
// come from the same environment variables and config file the basaltic command-line client
// reads ([NewConfig]), or are set in code with [Option]s or on the [Config] itself. The
// operations are in the queue package (github.com/basaltic-sh/sdk-go/queue):
//
//	cfg, err := basaltic.NewConfig(ctx)
//	if err != nil {
//		return err
//	}
//	client := queue.New(cfg)
//	result, err := client.SendMessage(ctx, queueID, &queue.SendMessageRequest{Body: "hello"})
//
// The module uses the standard library only, and builds with Go 1.19 and later.
package basaltic
