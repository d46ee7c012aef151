-- The seller's side of the exchange: the booking page reads every listing of one booking's tickets.
CREATE INDEX resale_listings_booking ON resale_listings (booking_id);
