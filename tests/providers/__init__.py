"""Every provider adapter held to one contract, against each adapter's fake server."""
