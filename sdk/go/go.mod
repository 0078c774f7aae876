module github.com/basaltic-sh/sdk-go

go 1.19
