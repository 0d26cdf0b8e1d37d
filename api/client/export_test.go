package client

// FoldAccount is foldAccount, for the vectors of account_fold.json.
var FoldAccount = foldAccount
