"""Text helpers shared by index time and query time: keys that merge spelling variants, stop words, sentence
splitting, name reading and heading numbers. Pure functions, no Haystack components, no model."""
