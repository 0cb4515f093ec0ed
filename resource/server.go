package resource

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// maxBody bounds a request; real ones are under 300 bytes.
const maxBody = 64 << 10

// Server puts a Store behind the HTTP+JSON protocol.
type Server struct {
	store *Store
	mux   *http.ServeMux
}

// NewServer makes the protocol handler for st; it does not own st.
func NewServer(st *Store) *Server {
	s := &Server{store: st, mux: http.NewServeMux()}
	s.mux.HandleFunc("POST /v1/read", func(w http.ResponseWriter, r *http.Request) { s.op(w, r, OpRead) })
	s.mux.HandleFunc("POST /v1/write", func(w http.ResponseWriter, r *http.Request) { s.op(w, r, OpWrite) })
	s.mux.HandleFunc("POST /v1/runs", s.initRun)
	s.mux.HandleFunc("GET /v1/runs/{run_id}", s.row)
	s.mux.HandleFunc("GET /v1/attempts", s.attempts)
	s.mux.HandleFunc("GET /v1/health", s.health)
	s.mux.HandleFunc("POST /v1/fence", s.fence)
	s.mux.HandleFunc("POST /v1/lease/{op}", s.lease)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no such endpoint %s %s; see docs/resource.md (POST /v1/read, POST /v1/write, POST /v1/runs, GET /v1/runs/{run_id}, GET /v1/attempts, GET /v1/health, POST /v1/fence, POST /v1/lease/{acquire,extend,release})", r.Method, r.URL.Path))
	})
	return s
}

// Handler returns the http.Handler to serve.
func (s *Server) Handler() http.Handler { return s.mux }

func (s *Server) op(w http.ResponseWriter, r *http.Request, op string) {
	var q opRequest
	if err := decodeBody(http.MaxBytesReader(w, r.Body, maxBody), &q, opFields); err != nil {
		writeErr(w, err)
		return
	}
	h, v, err := q.holder(op)
	if err != nil {
		writeErr(w, err)
		return
	}
	var rep Reply
	if op == OpWrite {
		rep, err = s.store.Write(r.Context(), h, v)
	} else {
		rep, err = s.store.Read(r.Context(), h)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

func (s *Server) initRun(w http.ResponseWriter, r *http.Request) {
	var q runRequest
	if err := decodeBody(http.MaxBytesReader(w, r.Body, maxBody), &q, "run_id"); err != nil {
		writeErr(w, err)
		return
	}
	created, err := s.store.InitRun(r.Context(), q.RunID)
	if err != nil {
		writeErr(w, err)
		return
	}
	row, err := s.store.Row(r.Context(), q.RunID)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, RunReply{Row: row, Created: created})
}

func (s *Server) row(w http.ResponseWriter, r *http.Request) {
	row, err := s.store.Row(r.Context(), r.PathValue("run_id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, row)
}

func (s *Server) attempts(w http.ResponseWriter, r *http.Request) {
	// Collected before the first byte so that a database error can still be an
	// error status rather than a truncated 200.
	list, err := s.store.Attempts(r.Context(), r.URL.Query().Get("run_id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for i := range list {
		if err := enc.Encode(&list[i]); err != nil {
			return // client went away
		}
	}
}

func (s *Server) fence(w http.ResponseWriter, r *http.Request) {
	var q opRequest
	if err := decodeBody(http.MaxBytesReader(w, r.Body, maxBody), &q, fenceFields); err != nil {
		writeErr(w, err)
		return
	}
	if q.Fence != nil || q.Value != nil {
		writeErr(w, badInput("fence and value are not part of a fence request: send run_id, client, process, token; the reply carries the number"))
		return
	}
	h, _, err := q.holder(OpRead)
	if err != nil {
		writeErr(w, err)
		return
	}
	rep, err := s.store.Fence(r.Context(), h)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

func (s *Server) lease(w http.ResponseWriter, r *http.Request) {
	op := r.PathValue("op")
	if op != LeaseAcquire && op != LeaseExtend && op != LeaseRelease {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no such endpoint POST /v1/lease/%s: acquire, extend or release", op))
		return
	}
	var q LeaseRequest
	if err := decodeBody(http.MaxBytesReader(w, r.Body, maxBody), &q, "key, token, ttl_ms"); err != nil {
		writeErr(w, err)
		return
	}
	rep, err := s.store.Lease(r.Context(), op, q)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, Health{Mode: s.store.Mode(), Backend: s.store.Backend(), Where: s.store.Where()})
}

func writeErr(w http.ResponseWriter, err error) {
	var in *InputError
	switch {
	case errors.As(err, &in):
		writeError(w, http.StatusBadRequest, in.Msg)
	case errors.Is(err, ErrUnknownRun):
		writeError(w, http.StatusNotFound, err.Error())
	default:
		writeError(w, http.StatusInternalServerError, err.Error())
	}
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, errorReply{Error: msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // a client that hung up is not the server's error
}
