package demo

import (
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"strings"
)

// User is a demo account.
type User struct {
	// Name is what the user types to sign in. Names are compared in lower
	// case.
	Name string
	// Password is the account's password. A demo shows it on the login
	// page; the store keeps only a salted hash of it.
	Password string
	// Phone is where the account's codes go, in international format.
	Phone string
}

// DemoUsers are the accounts of the demo: alice and bob.
func DemoUsers() []User {
	return []User{
		{Name: "alice", Password: "wonderland-42", Phone: "+44 7400 123456"},
		{Name: "bob", Password: "builder-42", Phone: "+44 7400 654321"},
	}
}

// DefaultHashIterations is the PBKDF2-HMAC-SHA256 iteration count unless
// Config.HashIterations says otherwise: OWASP's figure for that hash.
const DefaultHashIterations = 600_000

// account is a stored account: the salted hash of its password.
type account struct {
	name, phone string
	salt, hash  []byte
}

// userStore holds the accounts; it is read-only once built.
type userStore struct {
	iterations int
	accounts   map[string]*account
	// dummy is hashed against when the name is unknown, so that an
	// unknown name costs the same time as a wrong password.
	dummy *account
}

func newUserStore(users []User, iterations int) (*userStore, error) {
	s := &userStore{iterations: iterations, accounts: make(map[string]*account, len(users))}
	var err error
	if s.dummy, err = s.newAccount(User{Name: "", Password: rand.Text()}); err != nil {
		return nil, err
	}
	for _, u := range users {
		key := strings.ToLower(u.Name)
		if key == "" || s.accounts[key] != nil {
			return nil, fmt.Errorf("demo: user %q: empty or repeated name", u.Name)
		}
		if s.accounts[key], err = s.newAccount(u); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *userStore) newAccount(u User) (*account, error) {
	a := &account{name: strings.ToLower(u.Name), phone: u.Phone, salt: make([]byte, 16)}
	rand.Read(a.salt)
	var err error
	if a.hash, err = s.derive(u.Password, a.salt); err != nil {
		return nil, fmt.Errorf("demo: hashing a password: %w", err)
	}
	return a, nil
}

func (s *userStore) derive(password string, salt []byte) ([]byte, error) {
	return pbkdf2.Key(sha256.New, password, salt, s.iterations, 32)
}

// verify returns the account when name and password match one, or nil. It
// hashes the password whether or not the name exists and compares the
// hashes in constant time, so that its timing does not tell an unknown
// name from a wrong password.
func (s *userStore) verify(name, password string) *account {
	a, known := s.accounts[strings.ToLower(name)]
	if !known {
		a = s.dummy
	}
	got, err := s.derive(password, a.salt)
	if err != nil || subtle.ConstantTimeCompare(got, a.hash) != 1 || !known {
		return nil
	}
	return a
}

// known reports whether name is an account's own (lower-case) name.
func (s *userStore) known(name string) bool {
	_, ok := s.accounts[name]
	return ok
}

// lookup returns the account of name as typed, or nil.
func (s *userStore) lookup(name string) *account {
	return s.accounts[strings.ToLower(name)]
}
