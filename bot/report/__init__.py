"""Reports: the plan's JSON objects, rationale tables and pull-request bodies."""
