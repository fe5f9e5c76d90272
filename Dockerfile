# The fleetflow image the Helm chart (deploy/chart/fleetflow) runs: one static binary, no shell, non-root.
#   docker build --build-arg VERSION=0.1.0 -t ghcr.io/fleetflow/fleetflow:0.1.0 .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=""
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/fleetflow ./cmd/fleetflow

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/fleetflow /fleetflow
USER 65532:65532
ENTRYPOINT ["/fleetflow"]
