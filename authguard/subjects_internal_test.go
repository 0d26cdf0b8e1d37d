package authguard

// subjects is subjectsOf with every part required, positionally, as the
// internal tests write it.
func (e *Engine) subjects(kind Kind, tenant, flow, account, ip, fingerprint string) (subjects, error) {
	return e.subjectsOf(sentParts{kind: kind, tenant: tenant, flow: flow, account: account, ip: ip, fingerprint: fingerprint})
}
