"""Charts: plotly figures as plain JSON-ready dicts, one module per chart, drawn in the
browser by plotly.js. Text from logs in them is escaped (see composition.plain)."""
