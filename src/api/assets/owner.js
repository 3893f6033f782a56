// The owner console's one script, optional. It writes the pages' times in the reader's own zone
// and language (Intl; the page without it says UTC), gives the key's Copy button its use, shows a
// key's settings previews as they are typed (the page without it: as saved), and, on
// a key's list and on a message's page, asks the JSON API every few seconds for the messages shown
// and updates them in place (textContent only): the status with what it means, the attempts and
// their history, and which buttons apply. Without it the pages are the same, in UTC, and a reload
// shows the news.
'use strict';
(function () {
  var exact = new Intl.DateTimeFormat(undefined, { dateStyle: 'full', timeStyle: 'long' });
  var short = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
  var relative = window.Intl && Intl.RelativeTimeFormat ? new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' }) : null;
  var zone = short.resolvedOptions().timeZone || 'your time zone';
  var STEPS = [
    ['year', 31536000],
    ['month', 2592000],
    ['week', 604800],
    ['day', 86400],
    ['hour', 3600],
    ['minute', 60],
    ['second', 1],
  ];

  function ago(date) {
    var seconds = Math.round((date.getTime() - Date.now()) / 1000);
    for (var i = 0; i < STEPS.length; i++) {
      if (Math.abs(seconds) >= STEPS[i][1] || STEPS[i][0] === 'second') return relative.format(Math.round(seconds / STEPS[i][1]), STEPS[i][0]);
    }
    return '';
  }

  // A <time datetime>: its text in the reader's zone (or "5 minutes ago"), the exact time on hover.
  function localise(node) {
    var date = new Date(node.getAttribute('datetime'));
    if (isNaN(date.getTime())) return;
    node.title = exact.format(date);
    node.textContent = node.hasAttribute('data-relative') && relative ? ago(date) : short.format(date);
  }

  function localiseAll() {
    Array.prototype.forEach.call(document.querySelectorAll('time[datetime]'), localise);
    Array.prototype.forEach.call(document.querySelectorAll('[data-zone-note]'), function (note) {
      note.textContent = 'Times are in your time zone (' + zone + '); hold the pointer on one for the exact time.';
    });
  }
  localiseAll();

  // The key's Copy button: hidden in the HTML, since it needs this script.
  Array.prototype.forEach.call(document.querySelectorAll('[data-copy]'), function (button) {
    var source = document.getElementById(button.getAttribute('data-copy'));
    if (!source || !navigator.clipboard) return;
    button.hidden = false;
    button.addEventListener('click', function () {
      navigator.clipboard.writeText(source.textContent).then(function () {
        button.textContent = 'Copied';
        setTimeout(function () {
          button.textContent = 'Copy key';
        }, 2000);
      });
    });
  });

  // A key's settings: the previews follow what is typed. The server draws them (the same code as
  // the emails), asked a moment after the typing pauses; the one answer awaited is the latest's.
  var settings = document.querySelector('form[data-preview]');
  if (settings && window.fetch && window.URLSearchParams && window.FormData) {
    var previewUrl = settings.getAttribute('data-preview');
    var PREVIEWED = ['label', 'email_subject', 'email_field_order', 'email_hidden_fields', 'autoresponse_subject', 'autoresponse_text'];
    var PAUSE_MS = 300;
    var timer = null;
    var asked = 0;

    var part = function (name) {
      return settings.querySelector('[data-preview-field="' + name + '"]');
    };
    var asTyped = function (node) {
      var heading = node && node.querySelector('[data-preview-heading]');
      if (heading) heading.textContent = heading.getAttribute('data-preview-heading');
    };
    var refused = function (name, reason) {
      var node = part(name);
      node.textContent = reason || '';
      node.hidden = !reason;
    };
    var showEmail = function (email) {
      refused('email-refused', email.refused);
      if (email.refused !== undefined) return;
      part('email-subject').textContent = email.subject;
      part('email-fields').textContent = email.fields.join('\n') + '\n';
    };
    var showAutoresponse = function (autoresponse) {
      var section = part('autoresponse-text').closest('section');
      refused('autoresponse-refused', autoresponse.refused);
      if (autoresponse.refused !== undefined) {
        section.hidden = !autoresponse.refused;
        return;
      }
      section.hidden = false;
      part('autoresponse-subject').textContent = autoresponse.subject;
      var text = part('autoresponse-text');
      while (text.firstChild) text.removeChild(text.firstChild);
      autoresponse.paragraphs.forEach(function (lines) {
        var paragraph = document.createElement('p');
        lines.forEach(function (line, index) {
          if (index > 0) paragraph.appendChild(document.createElement('br'));
          line.forEach(function (piece) {
            if (piece.link === undefined) return paragraph.appendChild(document.createTextNode(piece.text));
            var link = document.createElement('a');
            link.href = piece.link;
            link.textContent = piece.link;
            paragraph.appendChild(link);
          });
        });
        text.appendChild(paragraph);
      });
      part('autoresponse-closing').textContent = autoresponse.closing;
    };
    var preview = function () {
      var mine = ++asked;
      var body = new URLSearchParams(new FormData(settings));
      fetch(previewUrl, { method: 'POST', body: body, credentials: 'same-origin', headers: { Accept: 'application/json' } })
        .then(function (response) {
          if (!response.ok || (response.headers.get('content-type') || '').indexOf('application/json') < 0) throw new Error('no preview');
          return response.json();
        })
        .then(function (shown) {
          if (mine !== asked) return;
          showEmail(shown.email);
          showAutoresponse(shown.autoresponse);
          asTyped(part('email-subject').closest('section'));
          asTyped(part('autoresponse-text').closest('section'));
        })
        // Signed out, or the service away: the previews stay as they were, a save shows them.
        .catch(function () {});
    };
    settings.addEventListener('input', function (event) {
      if (PREVIEWED.indexOf(event.target.name) < 0) return;
      clearTimeout(timer);
      timer = setTimeout(preview, PAUSE_MS);
    });
  }

  var list = document.querySelector('[data-refresh]');
  if (!list || !window.fetch) return;
  var url = list.getAttribute('data-refresh');
  // The page's own words for each status, and the statuses that may be re-sent.
  var statusHelp = JSON.parse(list.getAttribute('data-status-help') || '{}');
  var resendable = (list.getAttribute('data-resendable') || '').split(' ');
  var EVERY_MS = 3000;

  function field(card, name) {
    return card.querySelector('[data-field="' + name + '"]');
  }

  function set(card, name, text) {
    var node = field(card, name);
    if (node && node.textContent !== text) node.textContent = text;
  }

  // A time field: a <time> in the reader's zone, or the words for none.
  function setTime(card, name, iso, none) {
    var node = field(card, name);
    if (!node) return;
    var current = node.querySelector('time');
    if (iso && current && current.getAttribute('datetime') === iso) return;
    while (node.firstChild) node.removeChild(node.firstChild);
    if (!iso) {
      node.textContent = none;
      return;
    }
    var time = document.createElement('time');
    time.setAttribute('datetime', iso);
    localise(time);
    node.appendChild(time);
  }

  function show(card, name, shown) {
    var node = card.querySelector('[data-show="' + name + '"]');
    if (node) node.hidden = !shown;
  }

  function update(record) {
    var card = document.getElementById('s-' + record.submission_id);
    if (!card) return;
    card.setAttribute('data-status', record.email_status);
    var badge = field(card, 'status');
    if (badge) {
      badge.className = 'badge badge-' + record.email_status;
      if (badge.hasAttribute('title')) badge.title = statusHelp[record.email_status] || '';
    }
    set(card, 'status', record.email_status);
    set(card, 'hint', statusHelp[record.email_status] || '');
    set(card, 'attempts', String(record.delivery_attempts_total || 0));
    setTime(card, 'last-attempt', record.last_attempt_at, 'none yet');
    setTime(card, 'next-attempt', record.next_attempt_at, '');
    show(card, 'next-attempt', Boolean(record.next_attempt_at));
    setTime(card, 'sent', record.sent_at, 'not yet');
    set(card, 'error', record.last_error || 'none');
    set(card, 'report', describeReport(record.bounce));
    set(card, 'spam', describeSpam(record.spam));
    updateHistory(card, record);
    // The same buttons as the page would render for this status.
    var heldAsSpam = record.email_status === 'spam' || Boolean(record.spam && record.spam.mark === 'spam');
    show(card, 'ham', heldAsSpam);
    show(card, 'spam', !heldAsSpam);
    set(card, 'ham-label', record.email_status === 'spam' ? 'Not spam: send it to me' : 'Not spam');
    show(card, 'resend', resendable.indexOf(record.email_status) >= 0);
  }

  // The page's Delivery history list, rebuilt when an attempt was added.
  function updateHistory(card, record) {
    var attempts = record.delivery_attempts || [];
    show(card, 'history', attempts.length > 0);
    // Newest first, as the page lists them.
    var total = record.delivery_attempts_total || 0;
    set(card, 'history-count', total + ' attempt' + (total === 1 ? '' : 's') + (total > attempts.length ? ', the latest ' + attempts.length + ' shown' : ''));
    var listNode = field(card, 'history');
    if (!listNode || listNode.getAttribute('data-total') === String(total)) return;
    listNode.setAttribute('data-total', String(total));
    while (listNode.firstChild) listNode.removeChild(listNode.firstChild);
    // Numbered across every send, newest first: a re-send starts the worker's own count again.
    attempts.forEach(function (attempt, index) {
      var item = document.createElement('li');
      var time = document.createElement('time');
      time.setAttribute('datetime', attempt.at);
      localise(time);
      var reply = document.createElement('code');
      reply.textContent = attempt.response || 'no reply';
      item.appendChild(time);
      item.appendChild(document.createTextNode(' · attempt ' + (total - index) + ' · ' + attempt.outcome + ' · '));
      item.appendChild(reply);
      listNode.appendChild(item);
    });
  }

  // The same words as the page's Spam check line, as text.
  function describeSpam(spam) {
    var text;
    if (!spam || !spam.verdict) text = 'not checked';
    else if (spam.verdict === 'unchecked') text = 'not checked: the filter was unavailable, so the email went out';
    else {
      text = (spam.verdict === 'spam' ? 'spam' : 'not spam') + ', score ' + spam.score;
      if (spam.reasons.length)
        text +=
          ': ' +
          spam.reasons
            .map(function (r) {
              return r.symbol + ' ' + r.score;
            })
            .join(', ');
    }
    if (spam && spam.mark) text += '; you marked it ' + (spam.mark === 'spam' ? 'spam' : 'not spam');
    return text;
  }

  // The same words as the page's Report line, as text.
  function describeReport(report) {
    if (!report) return 'none';
    return (
      report.type +
      (report.status ? ' ' + report.status : '') +
      (report.reporting_mta ? ' from ' + report.reporting_mta : '') +
      ', ' +
      report.at +
      (report.diagnostic ? ': ' + report.diagnostic : '')
    );
  }

  function poll() {
    fetch(url, { credentials: 'same-origin', headers: { accept: 'application/json' } })
      .then(function (response) {
        if (!response.ok) throw new Error(String(response.status));
        return response.json();
      })
      .then(function (page) {
        // A list's page of records, or a message page's one record.
        (page.submissions || [page]).forEach(update);
        setTimeout(poll, EVERY_MS);
      })
      .catch(function () {
        // Signed out or offline: stop; the page still works by reloading.
      });
  }
  setTimeout(poll, EVERY_MS);
})();
