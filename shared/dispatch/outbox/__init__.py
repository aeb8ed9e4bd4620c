"""The outbox: the event row every change writes (sql), its relay to the queue after commit
and on a schedule (relay), how far behind it is (lag), and the consumer that puts events on the
bus (publisher)."""
