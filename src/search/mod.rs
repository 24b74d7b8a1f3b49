//! Retrieval: walking, chunking, tokenizing, the persistent tantivy index with its manifest,
//! and ranked hybrid queries over the repository.
