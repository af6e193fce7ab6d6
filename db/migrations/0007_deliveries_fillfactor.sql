-- Deliveries leave room on each page for their own updates. A target is updated three times after its insert
-- (the claim, the write-ahead mark, the record), and the mark changes no indexed column, so it can be a
-- heap-only (HOT) update, with no new entry in any of the three indexes, when the row's page has room. Full
-- pages (fillfactor 100) let a bit over half of the marks be HOT under post creation; with 30 % of each new
-- page kept free, about nine in ten are, and lock renewals too. Only pages written from now on are affected.
ALTER TABLE "deliveries" SET (fillfactor = 70);
