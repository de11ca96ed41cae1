"""A labelled corpus generator: invoices and receipts as text PDFs and as degraded scans.

`content` draws the facts of a document (vendor, dates, lines, amounts), `styles` decides how
they are printed (money and date styles), `layouts` draws them on a page, `scan` turns a page
into a degraded image, and `generate` writes documents with their normalised ground truth.
Everything is a function of the seed, so a corpus is reproducible byte for byte.
"""
