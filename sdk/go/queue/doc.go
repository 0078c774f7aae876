// Package queue is the basaltic queue API's client: the operations the document "Enviar y
// consumir mensajes" describes, as sqs-gateway serves them under /v1/queues. It exists so that
// a Go program sends, receives and acknowledges messages, and manages queues, with typed
// requests and results instead of hand-written HTTP: the document's request files unmarshal
// into SendMessageRequest and ReceiveRequest unchanged.
//
// Make a Client with New from a basaltic.Config:
//
//	cfg, err := basaltic.NewConfig(ctx) // BASALTIC_ENDPOINT, BASALTIC_API_KEY, …
//	client := queue.New(cfg)
//	sent, err := client.SendMessage(ctx, queueID, &queue.SendMessageRequest{Body: "hello"})
//	got, err := client.ReceiveMessages(ctx, queueID, &queue.ReceiveRequest{WaitTimeSeconds: basaltic.Int(20)})
//	for _, m := range got.Messages {
//		// process m, then acknowledge with its current receipt:
//		err = client.DeleteMessage(ctx, queueID, m.ReceiptHandle)
//	}
//
// Every method maps to one route; an error answer is an *Error carrying the API's code,
// message and HTTP status (errors.As, or CodeOf/IsCode). A receive is a lease: acknowledge
// after processing, and design for redelivery.
//
// Timeouts: a call whose context has no deadline gets one per attempt, basaltic.DefaultTimeout,
// except a receive, which gets its long-poll wait (20 s when it gives none) plus
// basaltic.ReceiveTimeoutMargin; a context deadline always wins, shorter or longer.
//
// Retries (basaltic.RetryPolicy): a 429 or 503 answer is retried after its Retry-After, else
// after an exponential backoff with jitter, up to MaxAttempts; a connection that could not be
// made is retried for every call; a connection lost after the request left is retried only for
// idempotent calls, so a send, receive, queue creation or redrive that may have been applied is
// never sent twice.
package queue
