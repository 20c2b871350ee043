"""OutlineIncoreScopes: each ``pl.at`` scope an InCore function — with a mixed scope's
crossings between cube and vector work and a split scope's two vector lanes."""
