module github.com/tollgate-auth/tollgate

go 1.26.8

require (
	github.com/golang-jwt/jwt/v5 v5.3.1 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/text v0.44.0 // indirect
)
