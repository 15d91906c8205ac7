"""Document and graph stores."""
