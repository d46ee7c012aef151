package crowd

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// fake is a minimal in-memory platform that speaks the contract's happy and unhappy paths, so the crowd's own
// logic (queue following, conflicts with alternatives, every payment behaviour) is tested in milliseconds. It is
// no stand-in for the real platform: the end-to-end test in package loadtest plays against that.
type fake struct {
	mu       sync.Mutex
	users    int
	shows    map[string]*fakeShow
	bookings map[string]*fakeBooking
	nextID   int
}

type fakeShow struct {
	seats    []string
	status   map[string]string // AVAILABLE, HELD, BOOKED
	opens    time.Time
	queue    bool
	rate     float64
	seq      map[string]int // user -> place
	next     int
	cursor   float64
	admitted map[string]bool
	tokens   map[string]string // user -> admission token
}

type fakeBooking struct {
	id, user, show, status string
	seats                  []string
}

func newFake() *fake {
	return &fake{shows: map[string]*fakeShow{}, bookings: map[string]*fakeBooking{}}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	if status >= 400 {
		w.Header().Set("Content-Type", "application/problem+json")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func problemOf(status int, slug string) map[string]any {
	return map[string]any{"type": "https://flashseat.dev/problems/" + slug, "title": http.StatusText(status), "status": status}
}

func (f *fake) user(r *http.Request) string {
	if t := r.URL.Query().Get("access_token"); t != "" {
		return t
	}
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
}

// admitted advances the show's cursor by the rate since opening and reports whether user's place is reached.
func (s *fakeShow) tick(now time.Time) {
	if now.Before(s.opens) {
		return
	}
	s.cursor = s.rate * now.Sub(s.opens).Seconds()
}

func (f *fake) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/auth/guest", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.users++
		n := f.users
		f.mu.Unlock()
		writeJSON(w, 201, map[string]string{"userId": fmt.Sprint("u", n), "token": fmt.Sprint("t", n)})
	})
	mux.HandleFunc("POST /admin/v1/venues", func(w http.ResponseWriter, r *http.Request) {
		var v struct {
			Halls []struct {
				Rows []struct {
					Row   string
					Seats int
				}
			}
		}
		_ = json.NewDecoder(r.Body).Decode(&v)
		f.mu.Lock()
		defer f.mu.Unlock()
		f.nextID++
		hall := fmt.Sprint("h", f.nextID)
		var seats []string
		for _, row := range v.Halls[0].Rows {
			for i := 1; i <= row.Seats; i++ {
				seats = append(seats, row.Row+strconv.Itoa(i))
			}
		}
		f.shows[hall] = &fakeShow{seats: seats} // a template the show copies
		writeJSON(w, 201, map[string]any{"venueId": "v", "halls": []map[string]any{{"hallId": hall, "seats": len(seats)}}})
	})
	mux.HandleFunc("POST /admin/v1/events", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 201, map[string]string{"eventId": "e"})
	})
	mux.HandleFunc("POST /admin/v1/shows", func(w http.ResponseWriter, r *http.Request) {
		var s struct {
			HallID       string
			SaleStartsAt time.Time
		}
		_ = json.NewDecoder(r.Body).Decode(&s)
		f.mu.Lock()
		defer f.mu.Unlock()
		f.nextID++
		id := fmt.Sprint("s", f.nextID)
		st := map[string]string{}
		for _, seat := range f.shows[s.HallID].seats {
			st[seat] = "AVAILABLE"
		}
		f.shows[id] = &fakeShow{seats: f.shows[s.HallID].seats, status: st, opens: s.SaleStartsAt,
			seq: map[string]int{}, admitted: map[string]bool{}, tokens: map[string]string{}}
		writeJSON(w, 201, map[string]string{"showId": id})
	})
	mux.HandleFunc("PUT /admin/v1/shows/{id}/queue", func(w http.ResponseWriter, r *http.Request) {
		var q struct {
			Enabled        bool
			AdmitPerSecond float64
		}
		_ = json.NewDecoder(r.Body).Decode(&q)
		f.mu.Lock()
		s := f.shows[r.PathValue("id")]
		s.queue, s.rate = q.Enabled, q.AdmitPerSecond
		f.mu.Unlock()
		writeJSON(w, 200, q)
	})
	mux.HandleFunc("GET /admin/v1/shows/{id}/queue", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		s := f.shows[r.PathValue("id")]
		s.tick(time.Now())
		writeJSON(w, 200, map[string]any{"enabled": s.queue, "waiting": max(0, s.next-int(s.cursor)), "active": len(s.admitted), "admittedTotal": len(s.admitted)})
	})
	mux.HandleFunc("GET /admin/v1/shows/{id}/stats", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		s := f.shows[r.PathValue("id")]
		c := map[string]int{}
		for _, st := range s.status {
			c[st]++
		}
		writeJSON(w, 200, map[string]int{"totalSeats": len(s.seats), "available": c["AVAILABLE"], "held": c["HELD"], "booked": c["BOOKED"]})
	})
	mux.HandleFunc("POST /queue/{id}/join", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		s, u := f.shows[r.PathValue("id")], f.user(r)
		if _, ok := s.seq[u]; !ok {
			s.next++
			s.seq[u] = s.next
		}
		s.tick(time.Now())
		writeJSON(w, 200, map[string]any{"status": "waiting", "position": s.seq[u] - int(s.cursor)})
	})
	mux.HandleFunc("GET /queue/{id}/events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		fl := w.(http.Flusher)
		u := f.user(r)
		for {
			f.mu.Lock()
			s := f.shows[r.PathValue("id")]
			s.tick(time.Now())
			seq, cursor := s.seq[u], int(s.cursor)
			pos := seq - cursor
			if pos <= 0 && s.tokens[u] == "" {
				// A JWT-shaped token whose iat is the second the fan's turn came, as a real admission tick would.
				iat := s.opens.Add(time.Duration(float64(seq) / s.rate * float64(time.Second))).Unix()
				claims, _ := json.Marshal(map[string]any{"sub": u, "iat": iat})
				s.tokens[u] = "e30." + base64.RawURLEncoding.EncodeToString(claims) + ".c2ln"
				s.admitted[u] = true
			}
			tok := s.tokens[u]
			f.mu.Unlock()
			if pos <= 0 {
				fmt.Fprintf(w, "id: a-%s\nevent: admitted\ndata: {\"admissionToken\":%q}\n\n", u, tok)
				fl.Flush()
				return
			}
			fmt.Fprintf(w, "id: p-%d-%d\nevent: position\ndata: {\"position\":%d}\n\n: heartbeat\n\n", seq, cursor, pos)
			fl.Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	gate := func(w http.ResponseWriter, r *http.Request, show string) bool {
		f.mu.Lock()
		s := f.shows[show]
		tok := r.Header.Get("X-Admission-Token")
		ok := !s.queue || (tok != "" && tok == s.tokens[f.user(r)])
		f.mu.Unlock()
		if !ok {
			writeJSON(w, 403, problemOf(403, "queue-required"))
		}
		return ok
	}
	mux.HandleFunc("GET /api/v1/shows/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		s, ok := f.shows[r.PathValue("id")]
		if !ok {
			writeJSON(w, 404, problemOf(404, "not-found"))
			return
		}
		writeJSON(w, 200, map[string]any{"showId": r.PathValue("id"), "saleStartsAt": s.opens, "totalSeats": len(s.seats)})
	})
	mux.HandleFunc("GET /api/v1/shows/{id}/seats", func(w http.ResponseWriter, r *http.Request) {
		if !gate(w, r, r.PathValue("id")) {
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		s := f.shows[r.PathValue("id")]
		var out []map[string]any
		for i, seat := range s.seats {
			out = append(out, map[string]any{"seatId": seat, "row": seat[:1], "number": i%20 + 1,
				"category": "GOLD", "price": 45000, "status": s.status[seat]})
		}
		writeJSON(w, 200, map[string]any{"showId": r.PathValue("id"), "seats": out})
	})
	mux.HandleFunc("POST /api/v1/bookings/hold", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ShowID  string
			SeatIDs []string
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		if !gate(w, r, req.ShowID) {
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		s := f.shows[req.ShowID]
		var taken []string
		for _, seat := range req.SeatIDs {
			if s.status[seat] != "AVAILABLE" {
				taken = append(taken, seat)
			}
		}
		if len(taken) > 0 {
			var alt []string
			for _, seat := range s.seats {
				if s.status[seat] == "AVAILABLE" && len(alt) < len(req.SeatIDs) {
					alt = append(alt, seat)
				}
			}
			p := problemOf(409, "seats-unavailable")
			p["unavailable"], p["alternatives"] = taken, alt
			writeJSON(w, 409, p)
			return
		}
		f.nextID++
		b := &fakeBooking{id: fmt.Sprint("b", f.nextID), user: f.user(r), show: req.ShowID, status: "HELD", seats: req.SeatIDs}
		f.bookings[b.id] = b
		for _, seat := range req.SeatIDs {
			s.status[seat] = "HELD"
		}
		writeJSON(w, 201, map[string]any{"bookingId": b.id, "status": "HELD", "showId": b.show, "seatIds": b.seats})
	})
	mux.HandleFunc("POST /api/v1/bookings/{id}/pay", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ PaymentMethod string }
		_ = json.NewDecoder(r.Body).Decode(&req)
		f.mu.Lock()
		defer f.mu.Unlock()
		b := f.bookings[r.PathValue("id")]
		confirm := func() {
			b.status = "CONFIRMED"
			for _, seat := range b.seats {
				f.shows[b.show].status[seat] = "BOOKED"
			}
		}
		switch req.PaymentMethod {
		case "pm_card_ok":
			confirm()
			writeJSON(w, 200, map[string]any{"bookingId": b.id, "status": "CONFIRMED"})
		case "pm_card_declined":
			writeJSON(w, 402, problemOf(402, "payment-declined"))
		case "pm_card_slow":
			b.status = "PAYMENT_PENDING"
			time.AfterFunc(100*time.Millisecond, func() { f.mu.Lock(); confirm(); f.mu.Unlock() })
			writeJSON(w, 202, map[string]any{"status": "PAYMENT_PENDING"})
		default:
			writeJSON(w, 502, problemOf(502, "bad-gateway"))
		}
	})
	mux.HandleFunc("GET /api/v1/bookings/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		b := f.bookings[r.PathValue("id")]
		writeJSON(w, 200, map[string]any{"bookingId": b.id, "status": b.status, "seatIds": b.seats})
	})
	mux.HandleFunc("DELETE /api/v1/bookings/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		b := f.bookings[r.PathValue("id")]
		b.status = "CANCELLED"
		for _, seat := range b.seats {
			f.shows[b.show].status[seat] = "AVAILABLE"
		}
		writeJSON(w, 200, map[string]any{"bookingId": b.id, "status": "CANCELLED", "seatsReleased": b.seats})
	})
	return mux
}
