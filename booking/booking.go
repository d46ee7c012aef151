// Package booking is the booking domain: venues with seat layouts, events, shows, the seat map, holds with expiry
// and the confirmation step that turns a hold into a sale. It holds the types, the errors the domain returns and
// the behaviour: the Service (its Catalog, Holds and Reconciler), the Checkout on top of it, and the Waitlist. The
// technology lives in subpackages (postgres, redis, http) that talk to this package in its own types.
//
// The division of labour between the stores is the heart of the design. Redis decides who holds a seat right now:
// one Lua script claims every requested seat or none, with a PX expiry so a hold lapses with nobody acting, and
// stamps each lock with a fencing token. Postgres is the ledger: a booking row per hold, and the sold seats in a
// table keyed by (show, seat), so that even when Redis loses its locks a seat can never be sold twice.
package booking

import (
	"strconv"
	"time"
)

// Status is a booking's state.
type Status string

// The states a booking passes through. A hold starts HELD; it ends CANCELLED (the fan let go), EXPIRED (its TTL
// passed, or its locks were lost) or CONFIRMED (paid). PAYMENT_PENDING is a HELD booking whose gateway has not
// answered yet; REFUNDED a CONFIRMED one whose money went back.
const (
	StatusHeld           Status = "HELD"
	StatusConfirmed      Status = "CONFIRMED"
	StatusPaymentPending Status = "PAYMENT_PENDING"
	StatusCancelled      Status = "CANCELLED"
	StatusExpired        Status = "EXPIRED"
	StatusRefunded       Status = "REFUNDED"
)

// SeatStatus is what the seat map shows for one seat.
type SeatStatus string

// A seat is AVAILABLE, HELD (under a live lock) or BOOKED (in the ledger).
const (
	SeatAvailable SeatStatus = "AVAILABLE"
	SeatHeld      SeatStatus = "HELD"
	SeatBooked    SeatStatus = "BOOKED"
)

// Venue is a place with one or more halls.
type Venue struct {
	ID    string
	Name  string
	City  string
	Halls []Hall
}

// Hall is a room of a venue with a fixed seat layout, given row by row.
type Hall struct {
	ID      string
	VenueID string
	Name    string
	Rows    []Row
}

// Row is one row of a hall's layout: seats numbered 1..Seats, all of one price category.
type Row struct {
	Label    string
	Seats    int
	Category string
}

// Seats counts the seats of h.
func (h Hall) Seats() int {
	n := 0
	for _, r := range h.Rows {
		n += r.Seats
	}
	return n
}

// Event is what is shown: a film, a concert.
type Event struct {
	ID              string
	Title           string
	Kind            string
	Genre           string
	Language        string
	DurationMinutes int
}

// Show is one performance of an event in a hall. Prices are per seat category, in minor units of Currency.
type Show struct {
	ID           string
	EventID      string
	HallID       string
	StartsAt     time.Time
	SaleStartsAt time.Time
	Currency     string
	Prices       map[string]int64
	// SaleClosedAt is when an operator closed the sale (zero while open): new holds are refused from then on.
	SaleClosedAt time.Time

	// Denormalised for reading; ignored when creating a show.
	Title      string
	Venue      string
	City       string
	Hall       string
	TotalSeats int
}

// Seat is one seat of a show's layout with its price. Its ID is the row label followed by the number ("A1").
type Seat struct {
	ID       string
	Row      string
	Number   int
	Category string
	Price    int64
}

// SeatID names the seat numbered n in row.
func SeatID(row string, n int) string { return row + strconv.Itoa(n) }

// SeatState is a seat with its live status.
type SeatState struct {
	Seat
	Status SeatStatus
}

// Booking is a hold and what became of it.
type Booking struct {
	ID          string
	UserID      string
	ShowID      string
	Status      Status
	SeatIDs     []string
	TotalAmount int64
	Currency    string
	// Fence is the fencing token the hold's Redis locks carry. It grows per show, also across Redis data loss; the
	// ledger refuses to confirm a booking whose fence is older than the newest one recorded for any of its seats.
	Fence     int64
	ExpiresAt time.Time
	CreatedAt time.Time
	// AdmissionJTI and AdmissionExp identify the waiting-room admission the hold was made under, when the show's
	// queue was on, so the fan's slot can be released when the booking is confirmed or cancelled.
	AdmissionJTI string
	AdmissionExp time.Time
	PaymentID    string
	Tickets      []Ticket
	// Refunds are the booking's refunds, oldest first (set by Checkout.BookingView only).
	Refunds []Refund
	// NextActionURL is, while the booking's payment waits for a 3-D Secure challenge, where its owner answers it
	// (set by Checkout.BookingView only).
	NextActionURL string
	// Language is the fan's page language when the hold was made (Accept-Language), for their notifications;
	// written with the hold, not read back with the booking.
	Language string
}

// Ticket is an issued ticket as a booking lists it.
type Ticket struct {
	ID     string
	SeatID string
	Code   string
	Status TicketStatus
	// Codes is the show's kind of code, set where tickets are shown to their holder; with rotating codes the
	// static Code is left empty (gate.go).
	Codes TicketCodes
}

// EventShows is an event with the shows a catalog search found for it.
type EventShows struct {
	Event
	Shows []ShowSummary
}

// ShowSummary is a show as the catalog lists it.
type ShowSummary struct {
	ID             string
	StartsAt       time.Time
	Venue          string
	City           string
	Hall           string
	TotalSeats     int
	AvailableSeats int
	QueueEnabled   bool
}

// Search filters the catalog. Empty fields match everything; Date matches shows starting on that UTC day.
type Search struct {
	City     string
	Date     time.Time
	Genre    string // exact, case-insensitive
	Language string // exact, case-insensitive
	Query    string
	Limit    int
}

// Counts is a show's seat availability. Available excludes held and booked seats.
type Counts struct {
	Total     int
	Available int
	Held      int
	Booked    int
}

// Stats is a show's operator view.
type Stats struct {
	Counts
	Revenue        int64
	HoldsTotal     int64
	ConflictsTotal int64
}

// SeatEvent is a change of one seat's status, as the seat stream carries it.
type SeatEvent struct {
	SeatID string     `json:"seatId"`
	Status SeatStatus `json:"status"`
}
